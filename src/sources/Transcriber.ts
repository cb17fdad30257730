import type { Document } from '../ingest/Document.js';
import { squash } from '../ingest/Document.js';

/** Turns audio into a timed transcript. Off unless configured: transcription costs money and time. */
export type Transcriber = {
  id: string;
  /** The largest audio file the endpoint accepts (OpenAI's is 25 MB). */
  maxBytes: number;
  transcribe(audio: Uint8Array, file: { name: string; type: string | undefined }): Promise<Document>;
};

/**
 * A transcription that failed. `transient` (unreachable, 429, 5xx): the episode is tried again on the next sync;
 * otherwise (a refused file, no text) it is indexed from its show notes.
 */
export class TranscriberError extends Error {
  override name = 'TranscriberError';
  constructor(
    message: string,
    readonly transient: boolean,
  ) {
    super(message);
  }
}

type Verbose = { text?: string; segments?: { start: number; end: number; text: string }[] };

/**
 * An OpenAI-compatible `/audio/transcriptions` endpoint (OpenAI, Groq, a self-hosted faster-whisper or whisper.cpp
 * server): multipart upload, `verbose_json` for timed segments.
 */
export function openAi(options: { baseUrl: string; apiKey?: string | undefined; model: string; timeoutMs?: number; maxBytes?: number }): Transcriber {
  return {
    id: `openai:${options.model}`,
    maxBytes: options.maxBytes ?? 25 * 1024 * 1024,
    async transcribe(audio, file) {
      const form = new FormData();
      form.append('file', new Blob([audio], { type: file.type ?? 'application/octet-stream' }), file.name);
      form.append('model', options.model);
      form.append('response_format', 'verbose_json');
      form.append('timestamp_granularities[]', 'segment');
      let response: Response;
      try {
        response = await fetch(`${options.baseUrl}/audio/transcriptions`, {
          method: 'POST',
          body: form,
          headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
          signal: AbortSignal.timeout(options.timeoutMs ?? 15 * 60_000),
        });
      } catch (error) {
        throw new TranscriberError(`transcription endpoint unreachable: ${error instanceof Error ? error.message : String(error)}`, true);
      }
      if (!response.ok) throw new TranscriberError(`transcription endpoint answered ${response.status}`, response.status === 429 || response.status >= 500);
      const body = (await response.json().catch(() => ({}))) as Verbose;
      const segments = (body.segments ?? []).filter((s) => typeof s.text === 'string' && Number.isFinite(s.start));
      if (segments.length > 0) {
        return { blocks: segments.map((s) => ({ kind: 'cue' as const, text: squash(s.text), startSeconds: s.start, endSeconds: Math.max(s.end, s.start) })).filter((b) => b.text !== '') };
      }
      if (typeof body.text === 'string' && body.text.trim() !== '') return { blocks: [{ kind: 'paragraph', text: squash(body.text) }] };
      throw new TranscriberError('transcription endpoint returned no text', false);
    },
  };
}
