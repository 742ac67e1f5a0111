// A real OpenID Connect provider for the dashboard's sign-in test
// (tests/dashboard/test_oidc_signin.py): panva's `oidc-provider`, the certified
// implementation many identity servers are built on, on loopback only.
//
//     node provider.mjs PROVIDER_PORT DASHBOARD_PORT CLIENT_ID CLIENT_SECRET
//
// Issuer http://localhost:PROVIDER_PORT, one confidential client whose redirect (and
// post-logout redirect) is Streamlit's callback on the dashboard,
// http://localhost:DASHBOARD_PORT/oauth2callback. Three people, each in one group:
// alice (team-support), bob (team-billing), carol (team-unmapped). Sign-in goes through
// the package's own development pages (devInteractions: any password is taken, the
// login name is the account), which the browser test fills in like a person would.
//
// `groups` is a scope of its own holding the `groups` claim, as Okta and Dex do, and is
// put into the ID token itself (conformIdTokenClaims: false): Streamlit's st.user is
// the ID token's claims (Authlib's `userinfo`), it never calls the userinfo endpoint.
// Consent is taken as given for this one client (a first-party dashboard), so the test
// does not click through a consent page that says nothing about the dashboard.
//
// Prints one line, `oidc-provider listening on http://localhost:PORT`, once it answers.
import http from 'node:http';

import Provider from 'oidc-provider';

const [providerPort, dashboardPort, clientId, clientSecret] = process.argv.slice(2);
if (!providerPort || !dashboardPort || !clientId || !clientSecret) {
  console.error('usage: node provider.mjs PROVIDER_PORT DASHBOARD_PORT CLIENT_ID CLIENT_SECRET');
  process.exit(2);
}

const ACCOUNTS = {
  alice: { name: 'Alice Support', groups: ['team-support'] },
  bob: { name: 'Bob Billing', groups: ['team-billing'] },
  carol: { name: 'Carol Elsewhere', groups: ['team-unmapped'] },
};

const issuer = `http://localhost:${providerPort}`;
const callback = `http://localhost:${dashboardPort}/oauth2callback`;

// The package's default sign-out pages load a font from a public host; these say the
// same without leaving loopback.
const page = (title, body) => `<!DOCTYPE html><html><head><meta charset="utf-8">
<title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    redirect_uris: [callback],
    post_logout_redirect_uris: [callback],
    grant_types: ['authorization_code'],
    response_types: ['code'],
  }],
  claims: {
    openid: ['sub'],
    profile: ['name', 'preferred_username'],
    groups: ['groups'],
  },
  conformIdTokenClaims: false,
  async findAccount(ctx, sub) {
    const account = ACCOUNTS[sub];
    if (!account) return undefined;
    return {
      accountId: sub,
      async claims() {
        return { sub, preferred_username: sub, ...account };
      },
    };
  },
  async loadExistingGrant(ctx) {
    const { client, session } = ctx.oidc;
    const grant = new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId });
    grant.addOIDCScope('openid profile groups');
    await grant.save();
    return grant;
  },
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: {
      enabled: true,
      async logoutSource(ctx, form) {
        ctx.body = page('Sign out?', `${form}
<button autofocus type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button>`);
      },
      async postLogoutSuccessSource(ctx) {
        ctx.body = page('Signed out', '<p>You are signed out.</p>');
      },
    },
  },
  // Fixed keys are fine for a throwaway provider that lives as long as one test.
  cookies: { keys: ['handoffscope-test-oidc-cookie-key'] },
});

const app = provider.callback();
const server = http.createServer(app);
server.listen(Number(providerPort), '127.0.0.1', () => {
  console.log(`oidc-provider listening on ${issuer}`);
});
// `localhost` may resolve to ::1 first (Chromium, httpx): answer there too where the
// machine has IPv6 loopback, and carry on without it where it has not.
const server6 = http.createServer(app);
server6.on('error', () => {});
server6.listen(Number(providerPort), '::1');

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => process.exit(0));
}
