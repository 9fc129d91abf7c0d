#!/bin/sh
exec sh "$(dirname "$0")/../../../mark.sh" extension
