// A real OpenID provider for the auth tests: panva's oidc-provider (a certified OpenID
// Connect / OAuth 2.0 authorization server) on loopback, plain http, issuing client-credentials
// access tokens for MCP resources. Started by `cargo xtask oidc` and `cargo xtask ci`.
//
//   node provider.mjs [--host 127.0.0.1] [--port 0] [--admin-port 0] [--ttl 60] [--short-ttl 2]
//                     [--alg RS256|ES256] [--resource PATTERN]... [--no-rfc8414]
//                     [--exit-with-stdin]
//
// Every option but the last also reads an environment variable (OIDC_HOST, OIDC_PORT,
// OIDC_ADMIN_PORT, OIDC_TTL, OIDC_SHORT_TTL, OIDC_ALG, OIDC_RESOURCES (space-separated
// patterns), OIDC_NO_RFC8414=1); the command line wins. Port 0 (the default) binds a free port
// first, then builds the issuer `http://HOST:PORT` from the port bound, so no other process can
// take it in between. `--exit-with-stdin`: exit when stdin closes (a parent holding it died).
//
// Once both listeners are up, ONE JSON line goes to stdout (diagnostics go to stderr):
//
//   {"issuer":"http://127.0.0.1:P","port":P,"admin":"http://127.0.0.1:A","admin_port":A,
//    "discovery":…,"jwks_uri":…,"token_endpoint":…,"introspection_endpoint":…,
//    "revocation_endpoint":…,"rfc8414":true,"resources":[…],"scopes":[…],"ttl":60,
//    "short_ttl":2,"signing":{"kid":…,"alg":"RS256"},
//    "clients":{"jwt":{"client_id":"mcp-jwt","client_secret":…,"token_format":"jwt","ttl":60},
//               "opaque":{…},"jwt_short":{…},"opaque_short":{…},
//               "introspector":{"client_id":"mcp-rs","client_secret":…}}}
//
// Clients (all `client_secret_basic`; secrets fresh on every start):
// - `mcp-jwt`, `mcp-opaque`: grant `client_credentials`. A token request names ONE `resource`
//   matching a resource pattern (`*`: any run of characters but `/`, `?`, `#`; by default
//   `http://127.0.0.1:*/mcp` and `http://localhost:*/mcp`) and gets a JWT (`typ: at+jwt`,
//   signed with the current key, its `kid` in the header) or an opaque access token for it:
//   `aud` = the resource, `scope` = exactly the scopes asked (each one of SCOPES, else
//   `invalid_scope`; none asked, no `scope`), `sub` = `client_id` = the client, `iss` = the
//   issuer, lifetime `--ttl` s. A resource matching no pattern: `invalid_target`. Without
//   `resource`, oidc-provider issues an opaque token with no audience and drops the MCP scopes:
//   always send one.
// - `mcp-jwt-short`, `mcp-opaque-short`: the same with lifetime `--short-ttl` s (expiry tests).
// - `mcp-rs`: the resource server's own credentials, no grant: may introspect (RFC 7662) any
//   opaque token of its issuer and revoke (RFC 7009) any; a client may introspect and revoke its
//   own, others' introspect as `active: false`. JWT access tokens can be neither introspected nor
//   revoked (oidc-provider answers `unsupported_token_type`).
// - DPoP (RFC 9449): a token request carrying a `DPoP` proof header (ES256, ES384, Ed25519,
//   EdDSA, RS256 or PS256; `htm` POST, `htu` the token endpoint; no nonce required; a replayed
//   proof is refused: `invalid_grant`) gets `token_type: DPoP` and a token bound to the proof key: `cnf.jkt` (the
//   key's RFC 7638 thumbprint) in the JWT and in the introspection answer, whose `token_type` is
//   `DPoP` too. Without the header the token is a Bearer token.
//
// Admin API, on its own loopback port (no authentication: a test fixture). `issuer=URL` picks an
// issuer created by `POST /issuers`; without it, the first one:
// - `GET /state[?issuer=URL]`: `{issuer, signing: {kid, alg}, published: [kid…], rotations}`.
// - `POST /rotate[?issuer=URL][&alg=RS256|ES256][&drop_old=1]`: generates a key (by default of
//   the other alg than the current one), makes it the signing key, publishes it first in the
//   JWKS, and either keeps the older keys published (default: JWTs signed before stay
//   verifiable) or drops them (`drop_old=1`: they no longer verify). Answers `{issuer, kid, alg,
//   previous: {kid, alg}, published, dropped}`. A new Provider instance takes over behind the
//   same HTTP listener: the issuer, its port and endpoints, the clients and their secrets stay;
//   opaque tokens, their revocations and DPoP proof replay records live in the issuer's store,
//   shared by its successive instances, so they stay as they were. Requests in flight finish on
//   the instance that took them.
// - `POST /issuers[?alg=RS256|ES256]`: another issuer on a fresh loopback port, with its own keys
//   and store and the same clients and secrets: for a test that rotates keys without disturbing
//   the others. Answers the startup line's fields for it (`issuer`, endpoints, `signing`, …).
// - `DELETE /issuers?issuer=URL`: stops an issuer created so (not the first one).
//
// The RFC 8414 metadata path `/.well-known/oauth-authorization-server` serves the same document
// as `/.well-known/openid-configuration` (oidc-provider serves only the latter); `--no-rfc8414`
// turns that alias off so a client's fallback can be tested.

import * as crypto from 'node:crypto';
import * as http from 'node:http';
import { parseArgs } from 'node:util';

import Provider, { errors } from 'oidc-provider';

/** The scopes every client-credentials client may ask for (any subset). */
const SCOPES = [
  'mcp:tools',
  'mcp:read',
  'mcp:conformance:baseline',
  'mcp:conformance:tools:call',
  'mcp:conformance:tools:test_simple_text',
  'mcp:conformance:resources:read',
  'mcp:conformance:resources:static',
  'mcp:conformance:resources:template:123',
  'mcp:conformance:prompts:get',
  'mcp:conformance:prompts:test_simple_prompt',
];

/** The resources accepted without `--resource`: any port of loopback, path `/mcp`. */
const DEFAULT_RESOURCES = ['http://127.0.0.1:*/mcp', 'http://localhost:*/mcp'];

/** Algs a DPoP proof may be signed with. */
const DPOP_ALGS = ['ES256', 'ES384', 'Ed25519', 'EdDSA', 'RS256', 'PS256'];

/** Algs of the signing keys. */
const SIGNING_ALGS = ['RS256', 'ES256'];

/** Seconds of leeway on `exp` and `iat` (DPoP proofs' `iat` too). */
const CLOCK_TOLERANCE = 5;

function fail(message) {
  process.stderr.write(`provider.mjs: ${message}\n`);
  process.exit(2);
}

function options() {
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        host: { type: 'string' },
        port: { type: 'string' },
        'admin-port': { type: 'string' },
        ttl: { type: 'string' },
        'short-ttl': { type: 'string' },
        alg: { type: 'string' },
        resource: { type: 'string', multiple: true },
        'no-rfc8414': { type: 'boolean' },
        'exit-with-stdin': { type: 'boolean' },
      },
    }).values;
  } catch (err) {
    fail(err.message);
  }
  const env = process.env;
  const whole = (name, value, min, max) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) {
      fail(`--${name} needs a whole number from ${min} to ${max}, not \`${value}\``);
    }
    return n;
  };
  const alg = parsed.alg ?? env.OIDC_ALG ?? 'RS256';
  if (!SIGNING_ALGS.includes(alg)) fail(`--alg must be one of ${SIGNING_ALGS.join(', ')}, not \`${alg}\``);
  const day = 24 * 60 * 60;
  return {
    host: parsed.host ?? env.OIDC_HOST ?? '127.0.0.1',
    port: whole('port', parsed.port ?? env.OIDC_PORT ?? '0', 0, 65535),
    adminPort: whole('admin-port', parsed['admin-port'] ?? env.OIDC_ADMIN_PORT ?? '0', 0, 65535),
    ttl: whole('ttl', parsed.ttl ?? env.OIDC_TTL ?? '60', 1, day),
    shortTtl: whole('short-ttl', parsed['short-ttl'] ?? env.OIDC_SHORT_TTL ?? '2', 1, day),
    alg,
    resources: parsed.resource
      ?? (env.OIDC_RESOURCES ? env.OIDC_RESOURCES.split(/\s+/).filter(Boolean) : DEFAULT_RESOURCES),
    rfc8414: !(parsed['no-rfc8414'] || env.OIDC_NO_RFC8414 === '1'),
    exitWithStdin: Boolean(parsed['exit-with-stdin']),
  };
}

/** A resource pattern: `*` stands for any run of characters other than `/`, `?` and `#`. */
function resourceMatcher(patterns) {
  const regexes = patterns.map((pattern) => new RegExp(`^${pattern
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/?#]*')}$`));
  return (resource) => regexes.some((re) => re.test(resource));
}

const opts = options();
const matchesResource = resourceMatcher(opts.resources);
const hostInUrl = opts.host.includes(':') ? `[${opts.host}]` : opts.host;

// ---------------------------------------------------------------------------------------------
// Storage: one per issuer, shared by its successive Provider instances (rotation keeps tokens).

/** Entries by key, each `{ value, expiresAt }` (ms since the epoch; Infinity: no expiry). */
class Store {
  #entries = new Map();

  #writes = 0;

  get(key) {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /** `expiresIn` in seconds; undefined: kept until deleted. An entry never expires earlier. */
  set(key, value, expiresIn) {
    const expiresAt = typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : Infinity;
    const previous = this.#entries.get(key)?.expiresAt ?? 0;
    this.#entries.set(key, { value, expiresAt: Math.max(expiresAt, previous) });
    this.#writes += 1;
    if (this.#writes % 1000 === 0) {
      const now = Date.now();
      for (const [k, entry] of this.#entries) if (entry.expiresAt <= now) this.#entries.delete(k);
    }
  }

  delete(key) {
    this.#entries.delete(key);
  }
}

/**
 * oidc-provider's adapter interface over a `Store`: unbounded (unlike the built-in memory
 * adapter, which keeps only the last 1000 entries of the whole process), each entry kept until
 * CLOCK_TOLERANCE s after its expiry, as the provider verifies them with that leeway.
 */
function adapterFor(store) {
  return class Adapter {
    constructor(model) {
      this.model = model;
    }

    key(id) {
      return `${this.model}:${id}`;
    }

    async upsert(id, payload, expiresIn) {
      const ttl = typeof expiresIn === 'number' ? expiresIn + CLOCK_TOLERANCE : undefined;
      store.set(this.key(id), payload, ttl);
      if (payload.grantId) {
        const key = `grant:${payload.grantId}`;
        store.set(key, [...(store.get(key) ?? []), this.key(id)], ttl);
      }
      if (payload.userCode) store.set(`userCode:${payload.userCode}`, id, ttl);
      if (this.model === 'Session' && payload.uid) store.set(`sessionUid:${payload.uid}`, id, ttl);
    }

    async find(id) {
      return store.get(this.key(id));
    }

    async findByUserCode(userCode) {
      const id = store.get(`userCode:${userCode}`);
      return id === undefined ? undefined : this.find(id);
    }

    async findByUid(uid) {
      const id = store.get(`sessionUid:${uid}`);
      return id === undefined ? undefined : this.find(id);
    }

    async consume(id) {
      const payload = store.get(this.key(id));
      if (payload) payload.consumed = Math.floor(Date.now() / 1000);
    }

    async destroy(id) {
      store.delete(this.key(id));
    }

    async revokeByGrantId(grantId) {
      const key = `grant:${grantId}`;
      for (const member of store.get(key) ?? []) store.delete(member);
      store.delete(key);
    }
  };
}

// ---------------------------------------------------------------------------------------------
// Signing keys and clients.

let keyCounter = 0;
const runTag = crypto.randomBytes(3).toString('hex');

/** A fresh private signing JWK for `alg`, its `kid` readable and unique. */
function generateKey(alg) {
  keyCounter += 1;
  const kid = `${alg.toLowerCase()}-${runTag}-${keyCounter}`;
  const { privateKey } = alg === 'ES256'
    ? crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' })
    : crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid, alg, use: 'sig' };
}

/** Client-credentials clients: id -> the name in the startup line, token format, lifetime. */
const ISSUING = {
  'mcp-jwt': { name: 'jwt', format: 'jwt', ttl: opts.ttl },
  'mcp-opaque': { name: 'opaque', format: 'opaque', ttl: opts.ttl },
  'mcp-jwt-short': { name: 'jwt_short', format: 'jwt', ttl: opts.shortTtl },
  'mcp-opaque-short': { name: 'opaque_short', format: 'opaque', ttl: opts.shortTtl },
};
const INTROSPECTOR = 'mcp-rs';
const secrets = Object.fromEntries([...Object.keys(ISSUING), INTROSPECTOR]
  .map((id) => [id, crypto.randomBytes(24).toString('base64url')]));

const clients = [
  ...Object.keys(ISSUING).map((clientId) => ({
    client_id: clientId,
    client_secret: secrets[clientId],
    token_endpoint_auth_method: 'client_secret_basic',
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    scope: SCOPES.join(' '),
  })),
  {
    client_id: INTROSPECTOR,
    client_secret: secrets[INTROSPECTOR],
    token_endpoint_auth_method: 'client_secret_basic',
    grant_types: [],
    response_types: [],
    redirect_uris: [],
  },
];

/** The clients as the startup line gives them. */
function clientsInfo() {
  const entry = (clientId, extra) => ({ client_id: clientId, client_secret: secrets[clientId], ...extra });
  return {
    ...Object.fromEntries(Object.entries(ISSUING).map(([clientId, { name, format, ttl }]) => [
      name, entry(clientId, { token_format: format, ttl }),
    ])),
    introspector: entry(INTROSPECTOR),
  };
}

/** Only the resource server and a token's own client see or revoke it. */
async function ownerOrResourceServer(ctx, client, token) {
  return client.clientId === INTROSPECTOR || client.clientId === token.clientId;
}

// ---------------------------------------------------------------------------------------------
// An issuer: its HTTP listener, keys, store and current Provider instance.

class Issuer {
  /** The keys, the signing key first. */
  keys;

  rotations = 0;

  store = new Store();

  #handler;

  constructor(alg) {
    this.keys = [generateKey(alg)];
    this.server = http.createServer((req, res) => {
      if (opts.rfc8414 && req.method === 'GET') {
        const [path, query] = req.url.split(/\?(.*)/s);
        if (path === '/.well-known/oauth-authorization-server') {
          req.url = `/.well-known/openid-configuration${query ? `?${query}` : ''}`;
        }
      }
      this.#handler(req, res);
    });
  }

  /** Listens on `port` (0: a free one), then builds the issuer URL and its Provider. */
  async start(port) {
    this.port = await listen(this.server, port);
    this.url = `http://${hostInUrl}:${this.port}`;
    this.#install();
    return this;
  }

  /** A Provider for the current keys takes over new requests. */
  #install() {
    const provider = new Provider(this.url, this.#configuration());
    provider.on('server_error', (ctx, err) => process.stderr.write(`provider.mjs: ${this.url}: ${err.stack}\n`));
    this.#handler = provider.callback();
  }

  #configuration() {
    const [signing] = this.keys;
    return {
      adapter: adapterFor(this.store),
      clients,
      jwks: { keys: this.keys },
      scopes: ['openid', ...SCOPES],
      clockTolerance: CLOCK_TOLERANCE,
      // The clients' default must be an alg the key set can sign with (it may hold one key).
      clientDefaults: { id_token_signed_response_alg: signing.alg },
      enabledJWA: { dPoPSigningAlgValues: DPOP_ALGS },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        introspection: { enabled: true, allowedPolicy: ownerOrResourceServer },
        revocation: { enabled: true, allowedPolicy: ownerOrResourceServer },
        dPoP: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: async () => undefined,
          useGrantedResource: async () => false,
          async getResourceServerInfo(ctx, resource, client) {
            const issuing = ISSUING[client.clientId];
            if (!issuing) throw new errors.InvalidTarget('this client gets no access tokens');
            if (!matchesResource(resource)) {
              throw new errors.InvalidTarget(`resource ${resource} matches none of ${opts.resources.join(' ')}`);
            }
            // Exactly the scopes asked: one the resource does not know is refused, not dropped.
            const asked = (ctx.oidc.params?.scope ?? '').split(' ').filter(Boolean);
            const unknown = asked.filter((scope) => !SCOPES.includes(scope));
            if (unknown.length) throw new errors.InvalidScope('requested scope is not allowed', unknown.join(' '));
            const info = {
              scope: SCOPES.join(' '),
              audience: resource,
              accessTokenTTL: issuing.ttl,
              accessTokenFormat: issuing.format,
            };
            if (issuing.format === 'jwt') info.jwt = { sign: { alg: signing.alg, kid: signing.kid } };
            return info;
          },
        },
      },
      // oidc-provider gives a client-credentials JWT `sub` = client_id but its introspection
      // answer no `sub`: the same claim for opaque tokens, so that both formats agree.
      extraTokenClaims: async (ctx, token) => (token.kind === 'ClientCredentials' ? { sub: token.clientId } : undefined),
      ttl: {
        ClientCredentials: (ctx, token) => token.resourceServer?.accessTokenTTL ?? opts.ttl,
        AccessToken: (ctx, token) => token.resourceServer?.accessTokenTTL ?? opts.ttl,
      },
      async renderError(ctx, out) {
        ctx.type = 'json';
        ctx.body = out;
      },
    };
  }

  state() {
    const [signing] = this.keys;
    return {
      issuer: this.url,
      signing: { kid: signing.kid, alg: signing.alg },
      published: this.keys.map((key) => key.kid),
      rotations: this.rotations,
    };
  }

  /** The startup line's fields for this issuer. */
  info() {
    return {
      issuer: this.url,
      port: this.port,
      discovery: `${this.url}/.well-known/openid-configuration`,
      jwks_uri: `${this.url}/jwks`,
      token_endpoint: `${this.url}/token`,
      introspection_endpoint: `${this.url}/token/introspection`,
      revocation_endpoint: `${this.url}/token/revocation`,
      rfc8414: opts.rfc8414,
      resources: opts.resources,
      scopes: SCOPES,
      ttl: opts.ttl,
      short_ttl: opts.shortTtl,
      signing: this.state().signing,
      clients: clientsInfo(),
    };
  }

  rotate(alg, dropOld) {
    const [previous] = this.keys;
    const key = generateKey(alg ?? (previous.alg === 'RS256' ? 'ES256' : 'RS256'));
    const dropped = dropOld ? this.keys.map((k) => k.kid) : [];
    this.keys = dropOld ? [key] : [key, ...this.keys];
    this.rotations += 1;
    this.#install();
    process.stderr.write(`provider.mjs: ${this.url}: signing with ${key.kid}${dropOld ? `, dropped ${dropped.join(' ')}` : ''}\n`);
    return {
      issuer: this.url,
      kid: key.kid,
      alg: key.alg,
      previous: { kid: previous.kid, alg: previous.alg },
      published: this.keys.map((k) => k.kid),
      dropped,
    };
  }

  close() {
    this.server.close();
    this.server.closeAllConnections();
  }
}

function listen(server, port) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, opts.host, () => {
      server.off('error', reject);
      resolve(server.address().port);
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Admin API.

/** Issuers by URL, the first one first. */
const issuers = new Map();

const USAGE = 'GET /state, POST /rotate, POST /issuers, DELETE /issuers (each ?issuer=URL, '
  + 'rotate ?alg=RS256|ES256&drop_old=1, POST /issuers ?alg=RS256|ES256)';

async function adminRoute(method, url) {
  const params = url.searchParams;
  const alg = params.get('alg') ?? undefined;
  if (alg !== undefined && !SIGNING_ALGS.includes(alg)) {
    return [400, { error: `alg must be one of ${SIGNING_ALGS.join(', ')}, not ${alg}` }];
  }
  const wanted = params.get('issuer');
  const issuer = wanted === null ? issuers.values().next().value : issuers.get(wanted);
  const route = `${method} ${url.pathname}`;
  if (route === 'POST /issuers') {
    const created = await new Issuer(alg ?? opts.alg).start(0);
    issuers.set(created.url, created);
    process.stderr.write(`provider.mjs: ${created.url}: issuer created\n`);
    return [201, created.info()];
  }
  if (!['GET /state', 'POST /rotate', 'DELETE /issuers'].includes(route)) {
    return [404, { error: USAGE }];
  }
  if (!issuer) return [404, { error: `no issuer ${wanted}` }];
  if (route === 'GET /state') return [200, issuer.state()];
  if (route === 'POST /rotate') {
    const dropOld = ['1', 'true', 'yes'].includes(params.get('drop_old') ?? '');
    return [200, issuer.rotate(alg, dropOld)];
  }
  if (wanted === null || issuer === issuers.values().next().value) {
    return [400, { error: 'DELETE /issuers needs ?issuer=URL of an issuer made by POST /issuers' }];
  }
  issuer.close();
  issuers.delete(issuer.url);
  return [200, { deleted: issuer.url }];
}

const admin = http.createServer(async (req, res) => {
  let status;
  let body;
  try {
    [status, body] = await adminRoute(req.method, new URL(req.url, 'http://admin'));
  } catch (err) {
    [status, body] = [500, { error: String(err?.stack ?? err) }];
  }
  req.resume();
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(`${JSON.stringify(body)}\n`);
});

try {
  const first = await new Issuer(opts.alg).start(opts.port);
  issuers.set(first.url, first);
  const adminPort = await listen(admin, opts.adminPort);
  const info = first.info();
  const line = {
    issuer: info.issuer,
    port: info.port,
    admin: `http://${hostInUrl}:${adminPort}`,
    admin_port: adminPort,
    ...info,
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
} catch (err) {
  fail(`cannot start: ${err.message}`);
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => process.exit(0));
}
if (opts.exitWithStdin) {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  process.stdin.resume();
}
