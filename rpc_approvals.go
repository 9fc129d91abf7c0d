package main

import (
	"fmt"
	"io"
)

// The approve command lines of rpc, read also by --json
// --approvals-stdin (approvals_client.go).

// readApprovalAnswers is --approvals-stdin: approve commands, one JSON
// line each, answered until the input ends or quit closes; a line that is
// not one is reported on stderr and changes nothing.
func readApprovalAnswers(in io.Reader, b *approvalBroker, stderr io.Writer, quit <-chan struct{}) {
	lines := make(chan inputLine)
	go sendLines(in, maxRPCLine, lines, quit) // ends at the input's end, or after quit
	for {
		var l inputLine
		select {
		case l = <-lines:
		case <-quit:
			return
		}
		if l.tooLong {
			fmt.Fprintf(stderr, "zot: --approvals-stdin: a line longer than %d MiB: dropped\n", maxRPCLine>>20)
		}
		if len(l.data) > 0 {
			req, err := decodeRPCRequest(l.data)
			switch {
			case err != nil:
			case req.Type != rpcApprove:
				err = fmt.Errorf("only approve commands are read here, not %q", req.Type)
			default:
				err = b.answer(req.ApprovalID, req.answer())
			}
			if err != nil {
				fmt.Fprintf(stderr, "zot: --approvals-stdin: %s\n", sanitize(err.Error()))
			}
		}
		if l.err != nil {
			return
		}
	}
}
