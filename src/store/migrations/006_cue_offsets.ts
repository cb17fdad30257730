/**
 * Where each caption cue starts inside a transcript chunk: a JSON array of [character offset, start seconds], so a
 * citation points at the moment its sentence is spoken rather than at the chunk's start. Chunks stored before this
 * have none and cite the chunk's start.
 */
export const cueOffsets = `
ALTER TABLE chunks ADD COLUMN cues TEXT;
`;
