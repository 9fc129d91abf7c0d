#!/usr/bin/env node
// A stand-in for a browser, for tests: $BROWSER runs it with the URL to
// open. It fetches the URL and follows every redirect, as a browser would
// after a user who is already signed in approved the request, so the
// authorization server's redirect reaches zot's loopback listener. It
// prints where it ended up and exits 0 on a 2xx answer.
const url = process.argv[2];
if (!url) {
  console.error('usage: follow-redirects.mjs URL');
  process.exit(2);
}
try {
  const res = await fetch(url, { redirect: 'follow', signal: AbortSignal.timeout(20000) });
  await res.text();
  console.log(`${res.status} ${res.url}`);
  process.exit(res.ok ? 0 : 1);
} catch (e) {
  console.error(`follow-redirects: ${e.message}`);
  process.exit(1);
}
