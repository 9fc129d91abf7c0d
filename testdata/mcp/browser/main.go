// browser stands in for a browser in the tests: $BROWSER runs it with the
// URL to open. It fetches the URL and follows every redirect, as a browser
// would after a user who is already signed in approved the request, so
// the authorization server's redirect reaches zot's loopback listener. It
// prints the status and where it ended up, and exits 0 on a 2xx answer.
// Go, not Python or Node: the suite starts it once per login, and a
// Python start with urllib costs twenty times this one's.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: browser URL")
		os.Exit(2)
	}
	// No proxy from the environment: every URL here is on the loopback.
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: nil}}
	res, err := client.Get(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "browser: %v\n", err)
		os.Exit(1)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	fmt.Println(res.StatusCode, res.Request.URL)
	if res.StatusCode < 200 || res.StatusCode > 299 {
		os.Exit(1)
	}
}
