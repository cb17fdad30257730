import type { Visibility } from '../../store/Profiles.js';
import { type Command, type CommandContext, UsageError, jsonOption, oneOf, required, text } from '../Command.js';

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
  async run({ services, out }, { values, positionals }) {
    const { store } = await services();
    const visibility: Visibility = oneOf(values, 'visibility', visibilities) ?? 'public';
    if (values.directory && visibility !== 'public') throw new UsageError('only public profiles can be listed in the directory');
    const owner = text(values, 'owner');
    const profile = await store.profiles.create({
      slug: positionals[0]!,
      name: required(values, 'name'),
      description: text(values, 'description') ?? '',
      visibility,
      directory: values.directory === true,
      ownerAccountId: owner === undefined ? null : (await store.accounts.get(owner)).id,
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
  async run({ services, out }, { values, positionals }) {
    const { store } = await services();
    const profile = await store.profiles.get(positionals[0]!);
    if (values.directory && values['no-directory']) throw new UsageError('give --directory or --no-directory, not both');
    const directory = values.directory ? true : values['no-directory'] ? false : undefined;
    const visibility = oneOf(values, 'visibility', visibilities);
    if ((directory ?? profile.directory) && (visibility ?? profile.visibility) !== 'public') {
      throw new UsageError('only public profiles can be listed in the directory (add --no-directory)');
    }
    const owner = text(values, 'owner');
    const updated = await store.profiles.update(profile.id, {
      name: text(values, 'name'),
      description: text(values, 'description'),
      visibility,
      directory,
      ownerAccountId: owner === undefined ? undefined : (await store.accounts.get(owner)).id,
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
  async run({ services, out }, { values }) {
    const { store } = await services();
    const names = new Map((await store.accounts.list()).map((a) => [a.id, a.name]));
    const rows = [];
    for (const p of await store.profiles.list()) {
      rows.push({
        ...p,
        owner: p.ownerAccountId === null ? null : names.get(p.ownerAccountId),
        aliases: await store.profiles.aliases(p.id),
        members: (await store.profiles.members(p.id)).map((id) => names.get(id)),
        grants: (await store.profiles.grants(p.id)).map((id) => names.get(id)),
        channels: (await store.channels.byProfile(p.id)).length,
        collections: (await store.collections.byProfile(p.id)).map((c) => c.slug),
      });
    }
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
  async run({ services, out }, { positionals }) {
    const { store } = await services();
    const profile = await store.profiles.get(positionals[0]!);
    await store.profiles.addAlias(profile.id, positionals[1]!);
    out.line(`@${positionals[1]} now resolves to ${profile.slug}`);
  },
};

const pair = async (services: CommandContext['services'], positionals: string[]) => {
  const { store } = await services();
  return { store, profile: await store.profiles.get(positionals[0]!), account: await store.accounts.get(positionals[1]!) };
};

export const membersAdd: Command = {
  name: 'members add',
  summary: "Add a team member: their bearer tokens and API keys may read the profile when it is private.",
  usage: 'members add SLUG ACCOUNT',
  positionals: { min: 2, max: 2 },
  async run({ services, out }, { positionals }) {
    const { store, profile, account } = await pair(services, positionals);
    await store.profiles.addMember(profile.id, account.id);
    out.line(`${account.name} is a team member of ${profile.slug}`);
  },
};

export const membersRemove: Command = {
  name: 'members remove',
  summary: 'Remove a team member.',
  usage: 'members remove SLUG ACCOUNT',
  positionals: { min: 2, max: 2 },
  async run({ services, out }, { positionals }) {
    const { store, profile, account } = await pair(services, positionals);
    if (!(await store.profiles.removeMember(profile.id, account.id))) throw new UsageError(`${account.name} is not a member of ${profile.slug}`);
    out.line(`${account.name} removed from ${profile.slug}`);
  },
};

export const accessGrant: Command = {
  name: 'access grant',
  summary: "Authorize another account's API keys to read a private profile (as its owner would).",
  usage: 'access grant SLUG ACCOUNT',
  positionals: { min: 2, max: 2 },
  async run({ services, out }, { positionals }) {
    const { store, profile, account } = await pair(services, positionals);
    await store.profiles.grantAccess(profile.id, account.id);
    out.line(`API keys of ${account.name} may read ${profile.slug}`);
  },
};

export const accessRevoke: Command = {
  name: 'access revoke',
  summary: 'Withdraw an account’s authorization to read a private profile.',
  usage: 'access revoke SLUG ACCOUNT',
  positionals: { min: 2, max: 2 },
  async run({ services, out }, { positionals }) {
    const { store, profile, account } = await pair(services, positionals);
    if (!(await store.profiles.revokeAccess(profile.id, account.id))) throw new UsageError(`${account.name} had no access grant on ${profile.slug}`);
    out.line(`API keys of ${account.name} may no longer read ${profile.slug}`);
  },
};

export const collectionsCreate: Command = {
  name: 'collections create',
  summary: 'Create a public collection @creator/collection from some of the creator profile’s channels.',
  usage: 'collections create CREATOR COLLECTION --name NAME --channel ID [--channel ID ...] [--description TEXT]',
  options: { name: { type: 'string' }, description: { type: 'string' }, channel: { type: 'string', multiple: true }, ...jsonOption },
  positionals: { min: 2, max: 2 },
  async run({ services, out }, { values, positionals }) {
    const { store } = await services();
    const creator = await store.profiles.get(positionals[0]!);
    const channelIds = (values.channel as string[] | undefined) ?? [];
    if (channelIds.length === 0) throw new UsageError('give at least one --channel');
    const collection = await store.collections.create({
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
  async run({ services, out }, { values }) {
    const { store } = await services();
    const slug = text(values, 'profile');
    const profiles = slug === undefined ? await store.profiles.list() : [await store.profiles.get(slug)];
    const rows = [];
    for (const p of profiles) {
      for (const c of await store.collections.byProfile(p.id)) rows.push({ handle: `@${p.slug}/${c.slug}`, ...c });
    }
    if (values.json) out.json(rows);
    else out.table(rows.map((c) => ({ handle: c.handle, name: c.name, channels: c.channelIds.join(',') })));
  },
};
