import type { ParseArgsConfig } from 'node:util';
import type { Config } from '../config/Config.js';
import type { Services } from '../Services.js';
import type { Output } from './Output.js';

export type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** What every command gets: configuration, the output layer, and the services (opened on first use). */
export type CommandContext = { config: Config; out: Output; services(): Promise<Services> };

/** One CLI command: its words, help text, options and handler. A handler returns the exit code. */
export type Command = {
  name: string;
  summary: string;
  usage: string;
  options?: NonNullable<ParseArgsConfig['options']>;
  positionals?: { min: number; max: number };
  run(context: CommandContext, args: { values: Values; positionals: string[] }): Promise<number | void> | number | void;
};

/** A usage error: the CLI prints it with the command's usage and exits with 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** A string option's value, or undefined. */
export const text = (values: Values, name: string): string | undefined => {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
};

/** A required string option. */
export const required = (values: Values, name: string): string => {
  const v = text(values, name);
  if (v === undefined || v.trim() === '') throw new UsageError(`--${name} is required`);
  return v;
};

/** A numeric option, checked. */
export const number = (values: Values, name: string, check: { min?: number; max?: number; integer?: boolean } = {}): number | undefined => {
  const v = text(values, name);
  if (v === undefined) return undefined;
  const n = Number(v);
  const bad =
    v.trim() === '' ||
    !Number.isFinite(n) ||
    (check.integer && !Number.isSafeInteger(n)) ||
    (check.min !== undefined && n < check.min) ||
    (check.max !== undefined && n > check.max);
  if (bad) {
    const range = [check.min !== undefined && `>= ${check.min}`, check.max !== undefined && `<= ${check.max}`].filter(Boolean).join(' and ');
    throw new UsageError(`--${name} must be ${check.integer ? 'an integer' : 'a number'}${range ? ` ${range}` : ''}, got "${v}"`);
  }
  return n;
};

/** An option limited to some words. */
export const oneOf = <T extends string>(values: Values, name: string, allowed: readonly T[]): T | undefined => {
  const v = text(values, name);
  if (v === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(v)) throw new UsageError(`--${name} must be one of ${allowed.join(', ')}, got "${v}"`);
  return v as T;
};

export const jsonOption = { json: { type: 'boolean' as const, short: 'j' } };

/** Resolves with the signal's name when the process is asked to stop (Ctrl-C, or a supervisor's SIGTERM). */
export const untilSignal = (): Promise<string> =>
  new Promise((resolve) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolve(signal));
  });
