#!/bin/sh
# redact: hides secrets (API keys, access tokens) in the assistant's
# answers before you see them. The transcript, and so the model, keeps the
# original. Shell and jq: the three registration frames, then jq turns each
# frame zot sends into the answer.
printf '%s\n' \
  '{"type":"hello","name":"redact","version":"1.0.0","capabilities":["events"]}' \
  '{"type":"subscribe","intercept":["assistant_message"]}' \
  '{"type":"ready"}'
exec jq -c --unbuffered '
  def redact:
    gsub("sk-[A-Za-z0-9_-]{16,}"; "[redacted]")
    | gsub("AKIA[0-9A-Z]{16}"; "[redacted]")
    | gsub("gh[pousr]_[A-Za-z0-9]{20,}"; "[redacted]")
    | gsub("xox[baprs]-[A-Za-z0-9-]{10,}"; "[redacted]");
  if .type == "event_intercept" and .event == "assistant_message" then
    (.text | redact) as $shown
    | if $shown != .text then {type: "event_intercept_response", id, replace_text: $shown}
      else {type: "event_intercept_response", id} end
  elif .type == "event_intercept" then {type: "event_intercept_response", id}
  elif .type == "shutdown" then {type: "shutdown_ack"}
  else empty end'
