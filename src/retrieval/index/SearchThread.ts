import { parentPort } from 'node:worker_threads';
import * as MaxScore from './MaxScore.js';
import { PostingList } from './Postings.js';
import * as SearchShards from './SearchShards.js';
import type { Reply, Request } from './SearchShards.js';

/**
 * A search thread (started by SearchShards): searches the ranges of a question's documents it claims, over the index's
 * shared memory, and answers with their finalists. It keeps nothing between questions.
 */

const port = parentPort!;

function searched(request: Request): Reply {
  const { docLength, deleted, channelOfDoc, allowed } = request;
  const plan: MaxScore.Plan = {
    lists: request.lists.map((view) => PostingList.over(view)),
    idfs: request.idfs,
    bounds: request.bounds,
    termOrder: request.termOrder,
    k: request.k,
    scoring: { k1: request.k1, b: request.b, averageLength: request.averageLength, docLength },
    exhaustive: false,
    threshold: request.threshold,
  };
  const accept = (doc: number) => deleted[doc] === 0 && allowed[channelOfDoc[doc]!] === 1;
  const ranges = SearchShards.claims(request.claims, request.documents, request.step);
  return { id: request.id, ...MaxScore.search(plan, ranges, accept, new MaxScore.SharedThreshold(request.shared)) };
}

port.on('message', (request: Request) => {
  let reply: Reply;
  try {
    reply = searched(request);
  } catch (error) {
    reply = { id: request.id, error: error instanceof Error ? error.message : String(error) };
  }
  port.postMessage(reply, 'docs' in reply ? [reply.docs.buffer, reply.scores.buffer] : []);
});
port.postMessage('ready');
