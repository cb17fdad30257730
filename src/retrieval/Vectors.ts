/** Nearest neighbours of a question among the chunks of some channels: chunk rowid to cosine similarity. */
export type VectorSearch = {
  search(question: string, options: { channelIds: Map<string, unknown>; limit: number }): Promise<Map<number, number>>;
};
