import { Type, type Static } from '@sinclair/typebox'
import { PRESET_NAMES } from './presets.ts'

/**
 * A 20-byte address. Mixed case must be a valid EIP-55 checksum (config/load.ts refuses one that
 * does not verify); all-lowercase (or all-uppercase) carries no checksum and is taken as written.
 */
export const AddressString = Type.String({ pattern: '^0x[0-9a-fA-F]{40}$', description: '0x-prefixed 20-byte address (EIP-55 checksummed, or all lowercase)' })

/**
 * The name of the environment variable that holds a secret (an RPC URL usually carries an API key).
 * The config never holds the secret itself, so a config file can be committed and quoted.
 */
export const EnvReference = Type.Object(
  { env: Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'environment variable name' }) },
  { additionalProperties: false },
)

/** One hop of a token's configured swap path toward WETH. */
export const SwapHop = Type.Object(
  {
    fee: Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'Uniswap V3 pool fee, in hundredths of a bip (500 = 0.05%)' }),
    tokenOut: AddressString,
  },
  { additionalProperties: false },
)

export const TokenConfig = Type.Object(
  {
    symbol: Type.String({ pattern: '^[A-Za-z0-9.]{1,16}$' }),
    address: AddressString,
    decimals: Type.Integer({ minimum: 0, maximum: 36 }),
    swapPath: Type.Optional(
      Type.Array(SwapHop, {
        minItems: 1,
        maxItems: 4,
        description: 'hops from this token to WETH; the last hop must end at the network\'s WETH',
      }),
    ),
  },
  { additionalProperties: false },
)

export const UniswapConfig = Type.Object(
  {
    factory: AddressString,
    swapRouter02: AddressString,
    quoterV2: AddressString,
  },
  { additionalProperties: false },
)

export const MarginsConfig = Type.Object(
  {
    quoteBps: Type.Integer({ minimum: 0, maximum: 100_000, default: 2_000, description: 'added to a quote\'s cost, in basis points' }),
    defaultSlippageBps: Type.Integer({ minimum: 0, maximum: 5_000, default: 50, description: 'slippage a swap helper allows when the caller names none' }),
    markupBps: Type.Integer({
      minimum: 0,
      maximum: 10_000,
      default: 500,
      description: 'what a relay charges above its cost, in basis points, when the payee refunds the rest of the payment (a PayeeVault)',
    }),
  },
  { additionalProperties: false, default: {} },
)

const EnvName = Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' })

export const RunnerConfig = Type.Object(
  {
    contract: AddressString,
    key: Type.Object(
      { env: Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'environment variable holding the runner\'s private key (0x-hex)' }) },
      { additionalProperties: false },
    ),
    lanes: Type.Optional(
      Type.Union(
        [
          Type.Array(Type.Object({ env: EnvName }, { additionalProperties: false }), {
            minItems: 1,
            maxItems: 63,
            description: 'environment variables each holding a further runner key (0x-hex)',
          }),
          Type.Object(
            {
              mnemonic: Type.Object({ env: EnvName }, { additionalProperties: false, description: 'environment variable holding a BIP-39 mnemonic' }),
              count: Type.Integer({ minimum: 1, maximum: 63, description: 'its accounts m/44\'/60\'/0\'/0/1 to /count' }),
            },
            { additionalProperties: false },
          ),
        ],
        {
          description:
            'further runner keys besides runner.key, each a lane of its own (its nonces, transactions in flight, replacements); the Runner\'s owner must allow each (setOperator). Absent: one lane',
        },
      ),
    ),
    treasury: Type.Optional(
      Type.Object(
        {
          key: Type.Object({ env: EnvName }, { additionalProperties: false, description: 'environment variable holding the treasury\'s private key (0x-hex)' }),
          floorWei: Type.String({ pattern: '^[0-9]{1,30}$', description: 'a lane under this ETH balance (wei, decimal) is topped up' }),
          targetWei: Type.String({ pattern: '^[0-9]{1,30}$', description: 'to this balance (wei, decimal), above floorWei' }),
          intervalSec: Type.Integer({ minimum: 60, default: 600, description: 'at most one top-up per lane in this many seconds' }),
        },
        {
          additionalProperties: false,
          description: 'a key that tops each lane up to targetWei when its balance falls under floorWei, by a plain transfer (logged and counted: bruno_runner_lane_topups_total)',
        },
      ),
    ),
    broadcastUrl: Type.Optional(
      Type.Object(
        {
          env: Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'environment variable holding the URL' }),
          revertProtected: Type.Boolean({
            default: false,
            description: 'the endpoint never includes a transaction that reverts (e.g. Flashbots Protect): relay.maxRevertGas does not apply',
          }),
        },
        {
          additionalProperties: false,
          description:
            'where signed runner transactions are sent (eth_sendRawTransaction) instead of rpcUrl: a revert-protected or private-builder endpoint; reads and simulations stay on rpcUrl. A secret, like rpcUrl',
        },
      ),
    ),
    confirmations: Type.Integer({ minimum: 1, maximum: 64, default: 1, description: 'blocks on top of inclusion before a submission is done' }),
    pollMs: Type.Integer({ minimum: 50, maximum: 60_000, default: 1_000, description: 'how often the runner looks for work' }),
    stuckAfterMs: Type.Integer({ minimum: 1_000, default: 30_000, description: 'a sent transaction not included after this is replaced with a higher fee' }),
    maxSendingMs: Type.Integer({
      minimum: 10_000,
      default: 600_000,
      description: 'a transaction still not included after this is cancelled (a 0-value self-transfer at its nonce) and its submission fails',
    }),
    maxInFlight: Type.Integer({
      minimum: 1,
      maximum: 1_024,
      default: 16,
      description: 'the most transactions the runner key has sent and not yet seen included; more wait. geth and reth keep 16 pending per sender by default and refuse a 17th',
    }),
    feeBumpBps: Type.Integer({ minimum: 1_000, maximum: 100_000, default: 1_250, description: 'fee increase of a replacement, at least 10% (1000)' }),
    gasLimitBps: Type.Integer({
      minimum: 10_000,
      maximum: 30_000,
      default: 10_500,
      description: 'gas limit = the least limit that gives the call its whole stipend × this / 10000; the signed limit is what is priced',
    }),
    minBalanceWei: Type.String({
      pattern: '^[0-9]{1,30}$',
      default: '10000000000000000',
      description: 'preflight fails below this runner ETH balance, in wei (a decimal string: wei overflow JSON numbers); default 0.01 ETH',
    }),
  },
  { additionalProperties: false },
)

/**
 * Who may have how many submissions active, ERC-7562 style: a paying account, and a client (the
 * caller's address), each with a cap; one whose accepted submissions later failed by its own doing
 * (its payment or call failing at the re-check until the deadline, its payment reverting on chain)
 * is throttled to one active submission, then refused for a while.
 */
const partyLimits = (who: string, maxActive: number, throttleAfter: number, banAfter: number) =>
  Type.Object(
    {
      maxActive: Type.Integer({ minimum: 1, default: maxActive, description: `active submissions one ${who} may have` }),
      throttleAfter: Type.Integer({ minimum: 1, default: throttleAfter, description: 'failures of its doing in the window after which it may have only one active' }),
      banAfter: Type.Integer({ minimum: 1, default: banAfter, description: 'failures of its doing in the window after which its submissions are refused' }),
    },
    { additionalProperties: false, default: {} },
  )

export const AdmissionConfig = Type.Object(
  {
    account: partyLimits('paying account', 8, 2, 5),
    // A client address may stand for many agents (a NAT, a gateway): looser than an account's.
    client: partyLimits('client (caller address)', 64, 10, 25),
    windowSec: Type.Integer({ minimum: 60, default: 3_600, description: 'how far back failures count' }),
    banSec: Type.Integer({ minimum: 60, default: 3_600, description: 'how long a refusal lasts after the latest failure' }),
    simulations: Type.Object(
      {
        atOnce: Type.Integer({ minimum: 1, maximum: 1_000, default: 4, description: 'quotes and submits of one client simulated at once; the next is refused' }),
        refusedGasPerMinute: Type.Integer({
          minimum: 1_000_000,
          default: 60_000_000,
          description: 'gas the node may run in a minute for one client\'s refused submits and quotes (a refusal before any measure counts relay.maxCallGas); past it, the client is refused before simulating until that gas is a minute old',
        }),
      },
      { additionalProperties: false, default: {} },
    ),
  },
  { additionalProperties: false, default: {} },
)

export const RelayConfig = Type.Object(
  {
    admission: AdmissionConfig,
    quoteTtlSec: Type.Integer({ minimum: 5, maximum: 3_600, default: 120, description: 'how long a quote is valid' }),
    submissionTtlSec: Type.Integer({ minimum: 10, maximum: 86_400, default: 600, description: 'default deadline of a submission' }),
    maxTransactionBytes: Type.Integer({
      minimum: 4_096,
      maximum: 1_048_576,
      default: 131_072,
      description: 'the largest signed runner transaction a submission may make (geth and reth refuse over 128 KiB)',
    }),
    maxRevertGas: Type.Integer({
      minimum: 100_000,
      maximum: 16_777_216,
      default: 300_000,
      description:
        'the most gas a submission\'s transaction may cost the runner if its payer voids the payment before inclusion and it reverts in its payment phase: the intrinsic gas (calldata at the EIP-7623 floor) and the payment phase. Larger calls need a revert-protected runner.broadcastUrl',
    }),
    paymentMarginSec: Type.Integer({
      minimum: 0,
      maximum: 3_600,
      default: 30,
      description: 'a payment (3009 validBefore, a batch deadline) must run at least this long after submit; the runner stops sending this close to it',
    }),
    inclusionSec: Type.Integer({
      minimum: 0,
      maximum: 3_600,
      default: 30,
      description:
        'how long a sent transaction may take to be included: a payment must be valid at least paymentMarginSec + this at submit and at every send, or it would be cancelled at the margin (at the runner\'s cost) before its time to be included',
    }),
    failingHoldSec: Type.Integer({
      minimum: 10,
      maximum: 86_400,
      default: 120,
      description: 'a submission whose own payment or call keeps failing at the runner\'s looks fails after this long (counted against its payer)',
    }),
    retentionSec: Type.Integer({
      minimum: 60,
      default: 604_800,
      description: 'done and failed submissions are deleted this long after they settled (default 7 days)',
    }),
    maxCallGas: Type.Integer({
      minimum: 100_000,
      maximum: 100_000_000,
      default: 15_000_000,
      description: 'the largest gas stipend a relayed call may be given (also capped by the block gas limit)',
    }),
  },
  { additionalProperties: false, default: {} },
)

/**
 * A group's name: a built-in one (bruno, calibur, metamask, 3009, erc20, uniswap) or one a `plugins` entry
 * installs. Names are checked against the installed groups at start; lowercase, as they appear
 * in paths (`/mcp/erc20,uniswap`).
 */
export const GroupName = Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,31}$', description: 'a group\'s name, e.g. "erc20"' })

export const NetworkConfig = Type.Object(
  {
    preset: Type.Optional(
      Type.Union(
        PRESET_NAMES.map((name) => Type.Literal(name)),
        { description: 'fills name, chainId, weth, tokens, uniswap (and l1DataFee) for a known chain; what the entry gives overrides it (config/presets.ts)' },
      ),
    ),
    name: Type.String({ pattern: '^[a-z][a-z0-9-]{0,31}$', description: 'the `chain` argument every tool takes' }),
    chainId: Type.Integer({ minimum: 1 }),
    rpcUrl: EnvReference,
    rpcTimeoutMs: Type.Integer({ minimum: 100, maximum: 120_000, default: 10_000, description: 'an RPC request that takes longer fails (and is retried once)' }),
    weth: AddressString,
    tokens: Type.Array(TokenConfig, { minItems: 1 }),
    uniswap: UniswapConfig,
    payee: AddressString,
    margins: MarginsConfig,
    runner: RunnerConfig,
    relay: RelayConfig,
    l1DataFee: Type.Optional(
      Type.Literal('op-stack', {
        description: 'the chain charges an L1 data fee (OP-stack: Base, OP Mainnet), read from GasPriceOracle.getL1Fee and priced into every payment',
      }),
    ),
    groupOptions: Type.Record(GroupName, Type.Record(Type.String(), Type.Unknown()), {
      default: {},
      description:
        'each group\'s options on this chain, by group name, checked by the group\'s own schema (its `networkOptions`): e.g. {"calibur": {"address": "0x…"}}; a group given none here takes its defaults',
    }),
    walletImplementations: Type.Array(AddressString, {
      default: [],
      description:
        'implementations a paying smart wallet that is an ERC-1967 proxy may point at, its code being on the Runner\'s list: a proxy\'s code is the same whatever it points at, so one pointing anywhere else is refused',
    }),
    maxBlockAgeSec: Type.Integer({
      minimum: 0,
      default: 60,
      description: 'GET /readyz reports the chain not ready when its latest block is older than this; 0 only checks that the RPC answers',
    }),
  },
  { additionalProperties: false },
)


/** A group from outside Bruno, installed by a `plugins` entry (see PLUGINS.md). */
export const PluginEntry = Type.Object(
  {
    from: Type.String({
      minLength: 1,
      maxLength: 512,
      description: 'a package name (installed beside the config file or beside Bruno), or a path relative to the config file ("./groups/hello")',
    }),
    options: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'the group\'s options, checked by its own schema' })),
    order: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'overrides the order the group declares (its place in tools/list)' })),
  },
  { additionalProperties: false },
)

export const ServerConfig = Type.Object(
  {
    host: Type.String({ minLength: 1, default: '127.0.0.1' }),
    port: Type.Integer({ minimum: 0, maximum: 65535, default: 3030 }),
    allowedHosts: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: 'Host header values accepted ("*" for any); empty on a loopback bind means loopback names only',
    }),
    allowedOrigins: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: 'Origin values accepted besides loopback ones on a loopback bind; "*" accepts any',
    }),
    bodyLimit: Type.Integer({ minimum: 1024, maximum: 16 * 1024 * 1024, description: 'bytes; a larger body is 413', default: 1_048_576 }),
    trustProxy: Type.Union(
      [
        Type.Boolean(),
        Type.Integer({ minimum: 1, maximum: 16 }),
        Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }),
      ],
      {
        default: false,
        description:
          'whose X-Forwarded-For to believe for the client address (the rate limit\'s key): false (default) the TCP peer; a list of proxy addresses or CIDRs; a number of proxy hops; true any peer (only when nothing reaches Bruno but the proxy)',
      },
    ),
    rateLimit: Type.Object(
      {
        max: Type.Integer({ minimum: 1, default: 600, description: 'requests one client (by IP) may make per window; more is 429' }),
        windowMs: Type.Integer({ minimum: 1_000, default: 60_000 }),
      },
      { additionalProperties: false, default: {} },
    ),
  },
  { additionalProperties: false, default: {} },
)

/** The embedded store: one process owns the file (and so every runner key). */
export const SqliteStoreConfig = Type.Object(
  {
    kind: Type.Literal('sqlite', { default: 'sqlite' }),
    path: Type.String({ minLength: 1, default: '.bruno/bruno.sqlite', description: 'SQLite file (a relative path is taken from the working directory Bruno is started in, not the config file\'s directory); ":memory:" keeps nothing across restarts' }),
  },
  { additionalProperties: false },
)

/** A shared PostgreSQL: several replicas serve one deployment (DEPLOYMENT.md, "Scaling out"). */
export const PostgresStoreConfig = Type.Object(
  {
    kind: Type.Literal('postgres'),
    // A connection URL carries a password: like an RPC URL, only the variable's name is configured.
    url: EnvReference,
  },
  { additionalProperties: false },
)

export const StoreConfig = Type.Union([SqliteStoreConfig, PostgresStoreConfig], { default: {} })

/** The x402 binding (`POST /<chain>/v1/x402`, core/x402/): how long a paid request is held, and how long a payment it asks for stays valid. */
export const X402Config = Type.Object(
  {
    holdSec: Type.Integer({
      minimum: 1,
      maximum: 240,
      default: 120,
      description: 'seconds a paid request is held for its transaction to be mined before it is answered settlement_pending (Node\'s fetch gives up on headers at 300 s)',
    }),
    maxHeld: Type.Integer({
      minimum: 1,
      maximum: 1_000,
      default: 8,
      description: 'payments one client (by address) may have held at once (a retry of a held payment does not count again); one more is refused with 429 before its payment is taken',
    }),
    maxTimeoutSec: Type.Integer({
      minimum: 61,
      maximum: 3_600,
      default: 300,
      description: 'the maxTimeoutSeconds Bruno offers: the signed transfer is valid this long from signing (it must outlast the payment margin and inclusion)',
    }),
  },
  { additionalProperties: false, default: {} },
)

export const BrunoConfig = Type.Object(
  {
    server: ServerConfig,
    store: StoreConfig,
    x402: X402Config,
    groups: Type.Array(GroupName, {
      minItems: 1,
      uniqueItems: true,
      default: ['bruno', 'calibur', '3009', 'erc20', 'uniswap'],
      description: 'the groups this deployment serves, built-in or installed by `plugins`',
    }),
    plugins: Type.Array(PluginEntry, { default: [], description: 'groups from outside Bruno, installed (and served where `groups` enables them)' }),
    networks: Type.Array(NetworkConfig, { minItems: 1 }),
  },
  { additionalProperties: false },
)

export type AddressString = Static<typeof AddressString>
export type TokenConfig = Static<typeof TokenConfig>
export type NetworkConfig = Static<typeof NetworkConfig>
export type ServerConfig = Static<typeof ServerConfig>
export type GroupName = Static<typeof GroupName>
export type PluginEntry = Static<typeof PluginEntry>
export type BrunoConfig = Static<typeof BrunoConfig>
export type RunnerConfig = Static<typeof RunnerConfig>
export type StoreConfig = Static<typeof StoreConfig>
export type X402Config = Static<typeof X402Config>
export type SqliteStoreConfig = Static<typeof SqliteStoreConfig>
export type PostgresStoreConfig = Static<typeof PostgresStoreConfig>
