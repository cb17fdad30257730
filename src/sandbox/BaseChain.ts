/**
 * A local EVM chain standing in for Base, for tests and `profile-edge sandbox`: ganache on 127.0.0.1, with a USDC
 * stand-in (EIP-3009 transfer authorizations) compiled from `contracts/TestUsdc.sol` by solc-js and deployed, and
 * Multicall3 at its canonical address. The only module that imports ganache and solc.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ganache from 'ganache';
import { type Abi, type Address, type Hex, createPublicClient, createWalletClient, defineChain, http, parseAbi } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';

export type BaseChain = {
  rpcUrl: string;
  chainId: number;
  /** The USDC stand-in's address, and its EIP-712 domain name and version (what payers sign). */
  usdc: { address: Address; name: string; version: string };
  /** A funded account that pays gas (the facilitator's). */
  gasKey: Hex;
  /** Mints USDC (6 decimals, base units) to an address. */
  mint(to: Address, amount: bigint): Promise<void>;
  balanceOf(holder: Address): Promise<bigint>;
  close(): Promise<void>;
};

const multicall3 = '0xcA11bde05977b3631167028862bE2a173976CA11';

type Contracts = Record<string, { abi: Abi; bytecode: Hex; deployed: Hex }>;

/** Compiles the contracts for the EVM version ganache runs (shanghai): solc's newer default has opcodes it lacks. */
function compile(solc: { compile(input: string): string }, input: object): Contracts {
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  return Object.fromEntries(
    Object.entries(output.contracts['TestUsdc.sol']!).map(([name, c]) => [name, { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` as Hex, deployed: `0x${c.evm.deployedBytecode.object}` as Hex }]),
  );
}

/**
 * The compiled contracts: from node_modules/.cache/profile-edge when this source was compiled there before by this
 * solc with these settings, otherwise compiled (solc-js takes about two seconds to load and compile) and kept there.
 * A cache that cannot be read or written only costs the compile.
 */
async function contracts(): Promise<Contracts> {
  const source = fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), 'contracts', 'TestUsdc.sol'), 'utf8');
  const input = {
    language: 'Solidity',
    sources: { 'TestUsdc.sol': { content: source } },
    settings: { evmVersion: 'shanghai', optimizer: { enabled: true, runs: 200 }, outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } } },
  };
  const solcPackage = createRequire(import.meta.url).resolve('solc/package.json');
  const { version } = JSON.parse(fs.readFileSync(solcPackage, 'utf8')) as { version: string };
  const digest = createHash('sha256').update(JSON.stringify([version, input])).digest('hex').slice(0, 16);
  const file = path.join(path.dirname(solcPackage), '..', '.cache', 'profile-edge', `test-usdc-${digest}.json`);
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as Contracts;
  } catch {
    // Not compiled yet, or unreadable: compiled below.
  }
  const compiled = compile((await import('solc')).default, input);
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const next = `${file}.${process.pid}`;
    fs.writeFileSync(next, JSON.stringify(compiled));
    fs.renameSync(next, file);
  } catch {
    // A read-only install compiles at every start.
  }
  return compiled;
}

export async function start(options: { chainId: number; port?: number; usdcName?: string; usdcVersion?: string }): Promise<BaseChain> {
  const { chainId } = options;
  const deployerKey = generatePrivateKey();
  const gasKey = generatePrivateKey();
  const ether = `0x${(10n ** 21n).toString(16)}`;
  const server = ganache.server({
    logging: { quiet: true },
    chain: { chainId, networkId: chainId },
    wallet: { accounts: [deployerKey, gasKey].map((secretKey) => ({ secretKey, balance: ether })) },
    miner: { blockTime: 0 },
  });
  await server.listen(options.port ?? 0, '127.0.0.1');
  try {
    return await deployed(server, { ...options, deployerKey, gasKey });
  } catch (error) {
    // A chain that listens but could not be set up (the contract did not compile or deploy) is closed, not left running.
    await server.close().catch(() => undefined);
    throw error;
  }
}

/** The token deployed on a listening chain, and what the sandbox asks of it. */
async function deployed(
  server: ReturnType<typeof ganache.server>,
  options: { chainId: number; usdcName?: string; usdcVersion?: string; deployerKey: Hex; gasKey: Hex },
): Promise<BaseChain> {
  const { chainId, deployerKey, gasKey } = options;
  const rpcUrl = `http://127.0.0.1:${server.address().port}`;
  const chain = defineChain({ id: chainId, name: 'local-base', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [rpcUrl] } } });
  // A local chain answers late under load, never not at all: a minute rather than viem's 10 s for a remote node.
  const transport = http(rpcUrl, { timeout: 60_000 });
  const client = createPublicClient({ chain, transport, pollingInterval: 50, cacheTime: 0 });
  const deployer = createWalletClient({ account: privateKeyToAccount(deployerKey), chain, transport, pollingInterval: 50, cacheTime: 0 });
  const compiled = await contracts();
  const name = options.usdcName ?? 'USD Coin';
  const version = options.usdcVersion ?? '2';
  const hash = await deployer.deployContract({ abi: compiled.TestUsdc!.abi, bytecode: compiled.TestUsdc!.bytecode, args: [name, version] });
  const address = (await client.waitForTransactionReceipt({ hash })).contractAddress!;
  await client.request({ method: 'evm_setAccountCode', params: [multicall3, compiled.Multicall3Lite!.deployed] } as never);
  const abi = parseAbi(['function mint(address to, uint256 value)', 'function balanceOf(address holder) view returns (uint256)']);
  return {
    rpcUrl,
    chainId,
    usdc: { address, name, version },
    gasKey,
    async mint(to, amount) {
      await client.waitForTransactionReceipt({ hash: await deployer.writeContract({ address, abi, functionName: 'mint', args: [to, amount] }) });
    },
    balanceOf: (holder) => client.readContract({ address, abi, functionName: 'balanceOf', args: [holder] }),
    close: () => server.close(),
  };
}
