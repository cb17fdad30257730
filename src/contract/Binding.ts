import { z } from 'zod';

/** Where a tool is served: the global endpoint, or a per-profile endpoint bound to one slug. */
export const Binding = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('global') }).strict(),
  z.object({ kind: z.literal('profile'), slug: z.string().min(1) }).strict(),
]);
export type Binding = z.infer<typeof Binding>;

/** The binding of an endpoint reached with or without a profile slug in its path. */
export const bindingOf = (slug: string | undefined): Binding => (slug === undefined ? { kind: 'global' } : { kind: 'profile', slug });
