/** The wire contract of SPEC.md, written once; handlers, transports, tests and the OpenAPI document import it. */
export * from './Channel.js';
export * from './Directory.js';
export * from './ErrorBody.js';
export * from './Mcp.js';
export * from './Query.js';
export * from './Quote.js';
