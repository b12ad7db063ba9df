#!/bin/sh
# A BROWSER for tests that drive the page themselves: writes the URL it
# is given to url.txt in the current directory (rho's), and opens nothing.
printf '%s' "$1" > url.txt
