#!/bin/sh
# Prints something that is not JSON, with a terminal escape in it.
cat >/dev/null
printf 'hello \033[31mnot json\n'
