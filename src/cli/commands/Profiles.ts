import * as Accounts from '../../store/Accounts.js';
import * as Channels from '../../store/Channels.js';
import * as Collections from '../../store/Collections.js';
import * as Profiles from '../../store/Profiles.js';
import type { Visibility } from '../../store/Profiles.js';
import { type Command, UsageError, jsonOption, oneOf, required, text } from '../Command.js';

const visibilities = ['public', 'unlisted', 'private'] as const;

export const profilesCreate: Command = {
  name: 'profiles create',
  summary: "Create a profile (one expert's indexed archive); its slug is its handle.",
  usage: 'profiles create SLUG --name NAME [--description TEXT] [--visibility public|unlisted|private] [--directory] [--owner ACCOUNT]',
  options: {
    name: { type: 'string' },
    description: { type: 'string' },
    visibility: { type: 'string' },
    directory: { type: 'boolean' },
    owner: { type: 'string' },
    ...jsonOption,
  },
  positionals: { min: 1, max: 1 },
  run({ services, out }, { values, positionals }) {
    const db = services().db;
    const visibility: Visibility = oneOf(values, 'visibility', visibilities) ?? 'public';
    if (values.directory && visibility !== 'public') throw new UsageError('only public profiles can be listed in the directory');
    const owner = text(values, 'owner');
    const profile = Profiles.create(db, {
      slug: positionals[0]!,
      name: required(values, 'name'),
      description: text(values, 'description') ?? '',
      visibility,
      directory: values.directory === true,
      ownerAccountId: owner === undefined ? null : Accounts.get(db, owner).id,
    });
    if (values.json) out.json(profile);
    else out.line(`created ${profile.visibility} profile ${profile.slug}${profile.directory ? ' (listed in the directory)' : ''}`);
  },
};

export const profilesUpdate: Command = {
  name: 'profiles update',
  summary: "Change a profile's name, description, visibility, directory listing or owner.",
  usage: 'profiles update SLUG [--name NAME] [--description TEXT] [--visibility V] [--directory | --no-directory] [--owner ACCOUNT]',
  options: {
    name: { type: 'string' },
    description: { type: 'string' },
    visibility: { type: 'string' },
    directory: { type: 'boolean' },
    'no-directory': { type: 'boolean' },
    owner: { type: 'string' },
    ...jsonOption,
  },
  positionals: { min: 1, max: 1 },
  run({ services, out }, { values, positionals }) {
    const db = services().db;
    const profile = Profiles.get(db, positionals[0]!);
    if (values.directory && values['no-directory']) throw new UsageError('give --directory or --no-directory, not both');
    const directory = values.directory ? true : values['no-directory'] ? false : undefined;
    const visibility = oneOf(values, 'visibility', visibilities);
    if ((directory ?? profile.directory) && (visibility ?? profile.visibility) !== 'public') {
      throw new UsageError('only public profiles can be listed in the directory (add --no-directory)');
    }
    const owner = text(values, 'owner');
    const updated = Profiles.update(db, profile.id, {
      name: text(values, 'name'),
      description: text(values, 'description'),
      visibility,
      directory,
      ownerAccountId: owner === undefined ? undefined : Accounts.get(db, owner).id,
    });
    if (values.json) out.json(updated);
    else out.line(`updated ${updated.slug}: ${updated.visibility}${updated.directory ? ', listed' : ', not listed'}`);
  },
};

export const profilesList: Command = {
  name: 'profiles list',
  summary: 'List every profile with its visibility, owner, team and channel count.',
  usage: 'profiles list [--json]',
  options: jsonOption,
  run({ services, out }, { values }) {
    const db = services().db;
    const names = new Map(Accounts.list(db).map((a) => [a.id, a.name]));
    const rows = Profiles.list(db).map((p) => ({
      ...p,
      owner: p.ownerAccountId === null ? null : names.get(p.ownerAccountId),
      aliases: Profiles.aliases(db, p.id),
      members: Profiles.members(db, p.id).map((id) => names.get(id)),
      grants: Profiles.grants(db, p.id).map((id) => names.get(id)),
      channels: Channels.byProfile(db, p.id).length,
      collections: Collections.byProfile(db, p.id).map((c) => c.slug),
    }));
    if (values.json) out.json(rows);
    else
      out.table(
        rows.map((p) => ({ slug: p.slug, name: p.name, visibility: p.visibility, directory: p.directory, owner: p.owner, members: p.members.join(','), channels: p.channels, aliases: p.aliases.join(',') })),
      );
  },
};

export const profilesAlias: Command = {
  name: 'profiles alias',
  summary: 'Add another handle that resolves to a profile (for @mentions and paths).',
  usage: 'profiles alias SLUG HANDLE',
  positionals: { min: 2, max: 2 },
  run({ services, out }, { positionals }) {
    const db = services().db;
    const profile = Profiles.get(db, positionals[0]!);
    Profiles.addAlias(db, profile.id, positionals[1]!);
    out.line(`@${positionals[1]} now resolves to ${profile.slug}`);
  },
};

const pair = (services: () => { db: Parameters<typeof Profiles.get>[0] }, positionals: string[]) => {
  const db = services().db;
  return { db, profile: Profiles.get(db, positionals[0]!), account: Accounts.get(db, positionals[1]!) };
};

export const membersAdd: Command = {
  name: 'members add',
  summary: "Add a team member: their bearer tokens and API keys may read the profile when it is private.",
  usage: 'members add SLUG ACCOUNT',
  positionals: { min: 2, max: 2 },
  run({ services, out }, { positionals }) {
    const { db, profile, account } = pair(services, positionals);
    Profiles.addMember(db, profile.id, account.id);
    out.line(`${account.name} is a team member of ${profile.slug}`);
  },
};

export const membersRemove: Command = {
  name: 'members remove',
  summary: 'Remove a team member.',
  usage: 'members remove SLUG ACCOUNT',
  positionals: { min: 2, max: 2 },
  run({ services, out }, { positionals }) {
    const { db, profile, account } = pair(services, positionals);
    if (!Profiles.removeMember(db, profile.id, account.id)) throw new UsageError(`${account.name} is not a member of ${profile.slug}`);
    out.line(`${account.name} removed from ${profile.slug}`);
  },
};

export const accessGrant: Command = {
  name: 'access grant',
  summary: "Authorize another account's API keys to read a private profile (as its owner would).",
  usage: 'access grant SLUG ACCOUNT',
  positionals: { min: 2, max: 2 },
  run({ services, out }, { positionals }) {
    const { db, profile, account } = pair(services, positionals);
    Profiles.grantAccess(db, profile.id, account.id);
    out.line(`API keys of ${account.name} may read ${profile.slug}`);
  },
};

export const accessRevoke: Command = {
  name: 'access revoke',
  summary: 'Withdraw an account’s authorization to read a private profile.',
  usage: 'access revoke SLUG ACCOUNT',
  positionals: { min: 2, max: 2 },
  run({ services, out }, { positionals }) {
    const { db, profile, account } = pair(services, positionals);
    if (!Profiles.revokeAccess(db, profile.id, account.id)) throw new UsageError(`${account.name} had no access grant on ${profile.slug}`);
    out.line(`API keys of ${account.name} may no longer read ${profile.slug}`);
  },
};

export const collectionsCreate: Command = {
  name: 'collections create',
  summary: 'Create a public collection @creator/collection from some of the creator profile’s channels.',
  usage: 'collections create CREATOR COLLECTION --name NAME --channel ID [--channel ID ...] [--description TEXT]',
  options: { name: { type: 'string' }, description: { type: 'string' }, channel: { type: 'string', multiple: true }, ...jsonOption },
  positionals: { min: 2, max: 2 },
  run({ services, out }, { values, positionals }) {
    const db = services().db;
    const creator = Profiles.get(db, positionals[0]!);
    const channelIds = (values.channel as string[] | undefined) ?? [];
    if (channelIds.length === 0) throw new UsageError('give at least one --channel');
    const collection = Collections.create(db, {
      profileId: creator.id,
      slug: positionals[1]!,
      name: required(values, 'name'),
      description: text(values, 'description') ?? '',
      channelIds,
    });
    if (values.json) out.json(collection);
    else out.line(`created @${creator.slug}/${collection.slug} with ${collection.channelIds.length} channel(s)`);
  },
};

export const collectionsList: Command = {
  name: 'collections list',
  summary: 'List collections, optionally of one creator.',
  usage: 'collections list [--profile SLUG] [--json]',
  options: { profile: { type: 'string' }, ...jsonOption },
  run({ services, out }, { values }) {
    const db = services().db;
    const slug = text(values, 'profile');
    const profiles = slug === undefined ? Profiles.list(db) : [Profiles.get(db, slug)];
    const rows = profiles.flatMap((p) => Collections.byProfile(db, p.id).map((c) => ({ handle: `@${p.slug}/${c.slug}`, ...c })));
    if (values.json) out.json(rows);
    else out.table(rows.map((c) => ({ handle: c.handle, name: c.name, channels: c.channelIds.join(',') })));
  },
};
