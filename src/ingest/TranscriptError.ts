import { ServiceError } from '../errors/ServiceError.js';

/**
 * A transcript that cannot be read: the request's fault, never the service's, wherever it is raised. A module of its
 * own, so that a caller can tell it without loading the transcript reader.
 */
export class TranscriptError extends ServiceError {
  override name = 'TranscriptError';

  constructor(message: string) {
    super('invalid_request', message);
  }
}
