// Smoke check of the OpenID provider of provider.mjs: proves it does what the auth tests need,
// using only Node's fetch and node:crypto. Reads the provider from the environment the tests
// get: MCP_TEST_OIDC_ISSUER, MCP_TEST_OIDC_ADMIN and MCP_TEST_OIDC_CLIENTS (JSON). Rotates the
// issuer's keys (twice, the second time dropping the old ones): run it against a provider of its
// own. Prints `ok N - …` per check, `not ok N - … : why` on a failure, and exits 1 if any failed.
//
//   node smoke.mjs

import * as crypto from 'node:crypto';

const TIMEOUT_MS = 10_000;

const env = (name) => {
  const value = process.env[name];
  if (!value) {
    process.stderr.write(`smoke.mjs: ${name} is not set\n`);
    process.exit(2);
  }
  return value;
};
const issuer = env('MCP_TEST_OIDC_ISSUER');
const adminUrl = env('MCP_TEST_OIDC_ADMIN');
const clients = JSON.parse(env('MCP_TEST_OIDC_CLIENTS'));
// Any loopback port: the provider accepts http://127.0.0.1:*/mcp.
const RESOURCE = `http://127.0.0.1:${40000 + crypto.randomInt(20000)}/mcp`;

// ---------------------------------------------------------------------------------------------
// HTTP, JOSE.

async function request(url, { method = 'GET', form, client, headers = {} } = {}) {
  const init = { method, headers: { accept: 'application/json', ...headers }, signal: AbortSignal.timeout(TIMEOUT_MS) };
  if (client) {
    // client_secret_basic: each part form-encoded, then Basic (RFC 6749 §2.3.1).
    const enc = (s) => encodeURIComponent(s).replace(/%20/g, '+');
    const basic = Buffer.from(`${enc(client.client_id)}:${enc(client.client_secret)}`).toString('base64');
    init.headers.authorization = `Basic ${basic}`;
  }
  if (form) {
    init.body = new URLSearchParams(form).toString();
    init.headers['content-type'] = 'application/x-www-form-urlencoded';
  }
  const res = await fetch(url, init);
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

const b64u = (buf) => Buffer.from(buf).toString('base64url');
const fromB64u = (s) => Buffer.from(s, 'base64url');

function decodeJwt(token) {
  const parts = token.split('.');
  if (parts.length !== 3) throw new Error(`not a JWS compact token: ${token.slice(0, 40)}…`);
  return {
    header: JSON.parse(fromB64u(parts[0])),
    payload: JSON.parse(fromB64u(parts[1])),
    input: Buffer.from(`${parts[0]}.${parts[1]}`),
    signature: fromB64u(parts[2]),
  };
}

/** Verifies a JWT's signature with the JWKS key of its `kid` (RS256 or ES256). */
function verifyJwt(jwt, jwks) {
  const jwk = jwks.keys.find((k) => k.kid === jwt.header.kid);
  if (!jwk) throw new Error(`kid ${jwt.header.kid} is not in the JWKS (${jwks.keys.map((k) => k.kid).join(' ')})`);
  const key = crypto.createPublicKey({ key: jwk, format: 'jwk' });
  let ok;
  if (jwt.header.alg === 'RS256') {
    ok = crypto.verify('sha256', jwt.input, key, jwt.signature);
  } else if (jwt.header.alg === 'ES256') {
    ok = crypto.verify('sha256', jwt.input, { key, dsaEncoding: 'ieee-p1363' }, jwt.signature);
  } else {
    throw new Error(`unexpected alg ${jwt.header.alg}`);
  }
  if (!ok) throw new Error(`the signature does not verify with JWKS key ${jwk.kid}`);
}

/** RFC 7638 thumbprint of an EC public JWK: SHA-256 of {crv,kty,x,y}, base64url. */
function thumbprint({ crv, kty, x, y }) {
  return b64u(crypto.createHash('sha256').update(JSON.stringify({ crv, kty, x, y })).digest());
}

/** A DPoP proof (RFC 9449 §4.2), ES256, for `htm` `htu`. */
function dpopProof(keyPair, htm, htu, jti = crypto.randomUUID()) {
  const { crv, kty, x, y } = keyPair.publicKey.export({ format: 'jwk' });
  const header = { typ: 'dpop+jwt', alg: 'ES256', jwk: { crv, kty, x, y } };
  const payload = { jti, htm, htu, iat: Math.floor(Date.now() / 1000) };
  const input = `${b64u(JSON.stringify(header))}.${b64u(JSON.stringify(payload))}`;
  const signature = crypto.sign('sha256', Buffer.from(input), { key: keyPair.privateKey, dsaEncoding: 'ieee-p1363' });
  return `${input}.${b64u(signature)}`;
}

// ---------------------------------------------------------------------------------------------
// Checks.

let count = 0;
let failed = 0;

async function check(name, fn) {
  count += 1;
  try {
    await fn();
    console.log(`ok ${count} - ${name}`);
  } catch (err) {
    failed += 1;
    console.log(`not ok ${count} - ${name}: ${err.message}`);
  }
}

function assert(condition, message) {
  if (!condition) throw new Error(message);
}

function eq(actual, expected, what) {
  const [a, e] = [JSON.stringify(actual), JSON.stringify(expected)];
  if (a !== e) throw new Error(`${what}: expected ${e}, got ${a}`);
}

let meta;
let jwks;

async function discover() {
  const res = await request(`${issuer}/.well-known/openid-configuration`);
  eq(res.status, 200, 'discovery status');
  return res.json;
}

async function fetchJwks() {
  const res = await request(meta.jwks_uri);
  eq(res.status, 200, 'JWKS status');
  return res.json;
}

async function token(client, scope, extra = {}) {
  const form = { grant_type: 'client_credentials', resource: RESOURCE, ...(scope ? { scope } : {}) };
  const res = await request(meta.token_endpoint, { method: 'POST', form, client, headers: extra.headers });
  return res;
}

async function okToken(client, scope, extra) {
  const res = await token(client, scope, extra);
  eq(res.status, 200, `token request (${res.text.trim()})`);
  return res.json;
}

async function introspect(value, client = clients.introspector) {
  const res = await request(meta.introspection_endpoint, { method: 'POST', form: { token: value }, client });
  eq(res.status, 200, `introspection status (${res.text.trim()})`);
  return res.json;
}

/** A JWT access token's checks common to every one of them. */
function checkJwtAccessToken(body, client, scope, ttl) {
  eq(body.token_type, 'Bearer', 'token_type');
  eq(body.scope, scope, 'response scope');
  const jwt = decodeJwt(body.access_token);
  eq(jwt.header.typ, 'at+jwt', 'typ');
  assert(jwt.header.kid, 'no kid in the header');
  const p = jwt.payload;
  eq(p.iss, issuer, 'iss');
  eq(p.aud, RESOURCE, 'aud');
  eq(p.scope, scope, 'scope');
  eq(p.sub, client.client_id, 'sub');
  eq(p.client_id, client.client_id, 'client_id');
  eq(p.exp - p.iat, ttl, 'exp - iat');
  assert(Math.abs(p.iat - Date.now() / 1000) < 30, `iat ${p.iat} is not now`);
  verifyJwt(jwt, jwks);
  return jwt;
}

const ALL = 'mcp:tools mcp:read';
const CONFORMANCE = 'mcp:conformance:baseline mcp:conformance:tools:call mcp:conformance:tools:test_simple_text '
  + 'mcp:conformance:resources:read mcp:conformance:resources:static mcp:conformance:resources:template:123 '
  + 'mcp:conformance:prompts:get mcp:conformance:prompts:test_simple_prompt';

console.log(`smoke: issuer ${issuer}, resource ${RESOURCE}`);

await check('discovery: issuer, jwks_uri, token, introspection and revocation endpoints, DPoP algs', async () => {
  meta = await discover();
  eq(meta.issuer, issuer, 'issuer');
  for (const field of ['jwks_uri', 'token_endpoint', 'introspection_endpoint', 'revocation_endpoint']) {
    assert(typeof meta[field] === 'string' && meta[field].startsWith(`${issuer}/`), `${field}: ${meta[field]}`);
  }
  assert(meta.dpop_signing_alg_values_supported?.includes('ES256'), 'dpop_signing_alg_values_supported lacks ES256');
  assert(meta.grant_types_supported?.includes('client_credentials'), 'no client_credentials grant');
});

await check('RFC 8414 path serves the same metadata', async () => {
  const res = await request(`${issuer}/.well-known/oauth-authorization-server`);
  eq(res.status, 200, 'status');
  eq(res.json, meta, 'document');
});

await check('JWKS: public keys only, each with a kid', async () => {
  jwks = await fetchJwks();
  assert(jwks.keys.length >= 1, 'empty JWKS');
  for (const k of jwks.keys) {
    assert(k.kid, 'a key without kid');
    assert(!('d' in k) && !('p' in k), `key ${k.kid} is private`);
  }
});

let jwtBefore;
await check('JWT token: aud = resource, scope asked, iss, sub, exp; kid in the JWKS, signature verifies', async () => {
  const body = await okToken(clients.jwt, ALL);
  jwtBefore = checkJwtAccessToken(body, clients.jwt, ALL, clients.jwt.ttl);
  eq(body.expires_in, clients.jwt.ttl, 'expires_in');
});

await check('JWT token with the conformance scopes: exactly those asked; a subset: exactly the subset', async () => {
  checkJwtAccessToken(await okToken(clients.jwt, CONFORMANCE), clients.jwt, CONFORMANCE, clients.jwt.ttl);
  checkJwtAccessToken(await okToken(clients.jwt, 'mcp:read'), clients.jwt, 'mcp:read', clients.jwt.ttl);
});

await check('refusals: unknown scope (invalid_scope), foreign resource (invalid_target), bad secret (invalid_client)', async () => {
  let res = await token(clients.jwt, 'mcp:tools mcp:admin');
  eq([res.status, res.json?.error], [400, 'invalid_scope'], 'unknown scope');
  res = await request(meta.token_endpoint, {
    method: 'POST',
    client: clients.jwt,
    form: { grant_type: 'client_credentials', resource: 'http://127.0.0.1:1/other', scope: 'mcp:tools' },
  });
  eq([res.status, res.json?.error], [400, 'invalid_target'], 'foreign resource');
  res = await token({ ...clients.jwt, client_secret: 'wrong' }, 'mcp:tools');
  eq([res.status, res.json?.error], [401, 'invalid_client'], 'bad secret');
  res = await token(clients.introspector, 'mcp:tools');
  assert(res.status >= 400, `the introspection client got a token (${res.status})`);
});

let opaque;
await check('opaque token introspects active with aud, scope, sub, exp, iss, client_id', async () => {
  const body = await okToken(clients.opaque, ALL);
  eq(body.token_type, 'Bearer', 'token_type');
  assert(body.access_token.split('.').length === 1, 'the opaque token looks like a JWT');
  opaque = body.access_token;
  const info = await introspect(opaque);
  eq(info.active, true, 'active');
  eq(info.aud, RESOURCE, 'aud');
  eq(info.scope, ALL, 'scope');
  eq(info.sub, clients.opaque.client_id, 'sub');
  eq(info.client_id, clients.opaque.client_id, 'client_id');
  eq(info.iss, issuer, 'iss');
  eq(info.token_type, 'Bearer', 'token_type');
  eq(info.exp - info.iat, clients.opaque.ttl, 'exp - iat');
});

await check('introspection: another issuing client sees active:false; a JWT is refused', async () => {
  eq((await introspect(opaque, clients.jwt)).active, false, 'active for mcp-jwt');
  const jwt = (await okToken(clients.jwt, 'mcp:tools')).access_token;
  const res = await request(meta.introspection_endpoint, { method: 'POST', form: { token: jwt }, client: clients.introspector });
  eq([res.status, res.json?.error], [400, 'unsupported_token_type'], 'JWT introspection');
});

await check('revocation (by the resource server, and by the owner): then introspection says active:false', async () => {
  const revoke = async (value, client) => {
    const res = await request(meta.revocation_endpoint, { method: 'POST', form: { token: value }, client });
    eq(res.status, 200, `revocation status (${res.text.trim()})`);
  };
  const mine = (await okToken(clients.opaque, 'mcp:tools')).access_token;
  eq((await introspect(mine)).active, true, 'active before');
  await revoke(mine, clients.introspector);
  eq(await introspect(mine), { active: false }, 'after revocation by mcp-rs');
  const other = (await okToken(clients.opaque, 'mcp:tools')).access_token;
  await revoke(other, clients.opaque);
  eq(await introspect(other), { active: false }, 'after revocation by its client');
  eq((await introspect(opaque)).active, true, 'an unrevoked token');
});

await check(`short-lived tokens: ${clients.opaque_short.ttl} s, then introspection says active:false`, async () => {
  const ttl = clients.opaque_short.ttl;
  assert(ttl <= 10, `short ttl ${ttl} s is too long for the smoke`);
  const jwt = decodeJwt((await okToken(clients.jwt_short, 'mcp:tools')).access_token);
  eq(jwt.payload.exp - jwt.payload.iat, clients.jwt_short.ttl, 'JWT exp - iat');
  const body = await okToken(clients.opaque_short, 'mcp:tools');
  eq(body.expires_in, ttl, 'expires_in');
  eq((await introspect(body.access_token)).active, true, 'active at once');
  await new Promise((resolve) => { setTimeout(resolve, (ttl + 1) * 1000); });
  eq(await introspect(body.access_token), { active: false }, `after ${ttl + 1} s`);
});

await check('DPoP: token_type DPoP, cnf.jkt = the proof key thumbprint (JWT and introspection); replay refused', async () => {
  const keyPair = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jkt = thumbprint(keyPair.publicKey.export({ format: 'jwk' }));
  const proof = dpopProof(keyPair, 'POST', meta.token_endpoint);
  const body = await okToken(clients.jwt, 'mcp:tools', { headers: { dpop: proof } });
  eq(body.token_type, 'DPoP', 'token_type');
  const jwt = decodeJwt(body.access_token);
  eq(jwt.payload.cnf, { jkt }, 'JWT cnf');
  verifyJwt(jwt, jwks);
  // oidc-provider refuses a replay at the token endpoint as invalid_grant.
  const replay = await token(clients.jwt, 'mcp:tools', { headers: { dpop: proof } });
  eq([replay.status, replay.json?.error], [400, 'invalid_grant'], 'replayed proof');
  const wrongHtu = await token(clients.jwt, 'mcp:tools', { headers: { dpop: dpopProof(keyPair, 'POST', `${issuer}/elsewhere`) } });
  eq([wrongHtu.status, wrongHtu.json?.error], [400, 'invalid_dpop_proof'], 'proof for another URL');
  const opaqueBody = await okToken(clients.opaque, 'mcp:tools', { headers: { dpop: dpopProof(keyPair, 'POST', meta.token_endpoint) } });
  eq(opaqueBody.token_type, 'DPoP', 'opaque token_type');
  const info = await introspect(opaqueBody.access_token);
  eq([info.active, info.token_type, info.cnf], [true, 'DPoP', { jkt }], 'introspection');
});

const admin = async (method, path) => {
  const res = await request(`${adminUrl}${path}`, { method });
  eq(res.status, 200, `${method} ${path} (${res.text.trim()})`);
  return res.json;
};

let firstKid;
await check('rotation to ES256 keeping the old key: new kid published first, new tokens signed with it', async () => {
  const before = await admin('GET', '/state');
  firstKid = before.signing.kid;
  eq(jwtBefore.header.kid, firstKid, 'the earlier JWT kid');
  const rotated = await admin('POST', '/rotate?alg=ES256');
  eq(rotated.alg, 'ES256', 'alg');
  eq(rotated.previous.kid, firstKid, 'previous kid');
  jwks = await fetchJwks();
  eq(jwks.keys.map((k) => k.kid), [rotated.kid, ...before.published], 'JWKS kids');
  const jwt = checkJwtAccessToken(await okToken(clients.jwt, ALL), clients.jwt, ALL, clients.jwt.ttl);
  eq([jwt.header.kid, jwt.header.alg], [rotated.kid, 'ES256'], 'new token kid and alg');
  verifyJwt(jwtBefore, jwks);
  eq((await discover()).issuer, issuer, 'issuer after rotation');
  eq((await introspect(opaque)).active, true, 'an opaque token minted before');
});

await check('rotation to RS256 dropping the old keys: only the new kid published; the old JWT no longer verifies', async () => {
  const rotated = await admin('POST', '/rotate?alg=RS256&drop_old=1');
  eq(rotated.alg, 'RS256', 'alg');
  jwks = await fetchJwks();
  eq(jwks.keys.map((k) => k.kid), [rotated.kid], 'JWKS kids');
  assert(rotated.dropped.includes(firstKid), 'the first kid is not dropped');
  const jwt = checkJwtAccessToken(await okToken(clients.jwt, 'mcp:tools'), clients.jwt, 'mcp:tools', clients.jwt.ttl);
  eq([jwt.header.kid, jwt.header.alg], [rotated.kid, 'RS256'], 'new token kid and alg');
  let refused = false;
  try {
    verifyJwt(jwtBefore, jwks);
  } catch {
    refused = true;
  }
  assert(refused, 'the JWT of the dropped key still verifies');
  eq((await introspect(opaque)).active, true, 'an opaque token minted before both rotations');
  const state = await admin('GET', '/state');
  eq([state.signing.kid, state.rotations], [rotated.kid, 2], 'state');
});

await check('a second issuer (POST /issuers): own keys, same clients; rotation there leaves the first alone', async () => {
  const res = await request(`${adminUrl}/issuers?alg=ES256`, { method: 'POST' });
  eq(res.status, 201, `POST /issuers (${res.text.trim()})`);
  const other = res.json;
  assert(other.issuer !== issuer, 'same issuer');
  const otherMeta = (await request(other.discovery)).json;
  eq(otherMeta.issuer, other.issuer, 'its discovery issuer');
  const form = { grant_type: 'client_credentials', resource: RESOURCE, scope: 'mcp:tools' };
  const body = (await request(other.token_endpoint, { method: 'POST', form, client: clients.jwt })).json;
  const jwt = decodeJwt(body.access_token);
  eq([jwt.payload.iss, jwt.header.kid, jwt.header.alg], [other.issuer, other.signing.kid, 'ES256'], 'its token');
  const mine = await admin('GET', '/state');
  await admin('POST', `/rotate?issuer=${encodeURIComponent(other.issuer)}&drop_old=1`);
  eq((await admin('GET', '/state')).signing, mine.signing, 'the first issuer signing key');
  eq((await introspect(opaque)).active, true, 'the first issuer opaque token');
  const gone = await request(`${adminUrl}/issuers?issuer=${encodeURIComponent(other.issuer)}`, { method: 'DELETE' });
  eq(gone.status, 200, 'DELETE /issuers');
});

console.log(failed ? `smoke: ${failed} of ${count} checks FAILED` : `smoke: all ${count} checks passed`);
process.exit(failed ? 1 : 0);
