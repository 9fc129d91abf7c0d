#!/bin/sh
# Never says hello.
echo "thinking about it" >&2
sleep 30
