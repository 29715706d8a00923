# formats.sh: record one real Ruby program, then check every output format made from that recording.
# Sourced by run. Each tests/integration/formats.d/NAME.sh is sourced in turn with:
#   $raw      a --raw recording (200 Hz, 2 s) of tests/integration/ruby/formats.rb on the host Ruby
#   $fmtdir   a directory for its outputs
#   $NPM_DIR  node_modules of playwright-core and speedscope (scripts/npm-deps), "" if unavailable
#   $CHROMIUM the Chromium binary, "" if unavailable
# and the helpers of lib.sh (check, ok, not_ok, skipped).
fmtdir=$work/formats
mkdir -p "$fmtdir"
raw=$fmtdir/rec.raw
NPM_DIR=$("$top/scripts/npm-deps" 2>"$work/npm.err") || NPM_DIR=""
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if start_ruby 3.1 "$top/tests/integration/ruby/formats.rb"; then
	"$RBSCOPE" record -p "$pid" -r 200 -d 2 -f collapsed -o "$fmtdir/rec.collapsed" --raw "$raw" 2>"$work/fmt-rec.err"
	check "formats: recorded the program (--raw)" test -s "$raw"
	stop_ruby "$pid"
	for part in "$top"/tests/integration/formats.d/*.sh; do
		[ -e "$part" ] && . "$part"
	done
else
	skipped "formats: cannot start the program"
fi
