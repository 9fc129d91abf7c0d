#!/usr/bin/env python3
# A stand-in for a browser, for tests: $BROWSER runs it with the URL to
# open. It fetches the URL and follows every redirect, as a browser would
# after a user who is already signed in approved the request, so the
# authorization server's redirect reaches zot's loopback listener. It
# prints where it ended up and exits 0 on a 2xx answer. Python, not Node:
# the suite starts it once per login, and a Node start costs five times
# a Python one.
import sys
import urllib.error
import urllib.request

if len(sys.argv) < 2:
    print("usage: follow-redirects.py URL", file=sys.stderr)
    sys.exit(2)
# No proxy from the environment: every URL here is on the loopback.
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    with opener.open(sys.argv[1], timeout=20) as res:
        res.read()
        print(res.status, res.url)
except urllib.error.HTTPError as e:
    print(e.code, e.url)
    sys.exit(1)
except Exception as e:
    print(f"follow-redirects: {e}", file=sys.stderr)
    sys.exit(1)
