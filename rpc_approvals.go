package main

import (
	"fmt"
	"io"
)

// The approve and elicit command lines of rpc, read also by --json
// --approvals-stdin (approvals_client.go) and --elicitation-stdin
// (rpc_elicit.go).

// readClientAnswers is --approvals-stdin and --elicitation-stdin: approve
// and elicit commands, one JSON line each, answered until the input ends
// or quit closes; a line that is not one of those the flags asked for is
// reported on stderr and changes nothing. approvals or elicits is nil
// when its flag is not given.
func readClientAnswers(in io.Reader, approvals *approvalBroker, elicits *elicitBroker, stderr io.Writer, quit <-chan struct{}) {
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
			fmt.Fprintf(stderr, "zot: stdin: a line longer than %d MiB: dropped\n", maxRPCLine>>20)
		}
		if len(l.data) > 0 {
			req, err := decodeRPCRequest(l.data)
			switch {
			case err != nil:
			case req.Type == rpcApprove && approvals != nil:
				err = approvals.answer(req.ApprovalID, req.answer())
			case req.Type == rpcElicit && elicits != nil:
				err = elicits.answer(req.ElicitationID, req.Action, req.Content)
			default:
				err = fmt.Errorf("%s commands are not read here: %s", req.Type, stdinCommands(approvals != nil, elicits != nil))
			}
			if err != nil {
				fmt.Fprintf(stderr, "zot: stdin: %s\n", sanitize(err.Error()))
			}
		}
		if l.err != nil {
			return
		}
	}
}

// stdinCommands says which commands the flags given let stdin answer.
func stdinCommands(approvals, elicits bool) string {
	switch {
	case approvals && elicits:
		return "approve and elicit are"
	case approvals:
		return "only approve is (elicit needs --elicitation-stdin)"
	}
	return "only elicit is (approve needs --approvals-stdin)"
}
