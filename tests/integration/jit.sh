# jit.sh: Ruby with a JIT on (RUBIES_JIT): every frame there, every caller at its line, the running frame's line
# known or "?", never a stale one; and the JIT said to be on. Shares against the program's own account and
# --blocking are accuracy.sh's. Sourced by run (the spy suite, or `jit` alone).

jit_prog=$top/tests/integration/ruby/jit.rb
# jit_frames VERSION [FLAGS]: the checks on jit.rb under that Ruby, its JIT started with FLAGS (default --yjit).
jit_frames() {
	local ver=$1
	[ $# -gt 1 ] && ver="$1 $2"
	if ! jit_flags=${2:---yjit} start_ruby "$1" "$jit_prog"; then
		skipped "jit: ruby $ver: cannot start it ($(tail -n 1 "$work/chroot.err" 2>/dev/null))"
		return
	fi
	"$RBSCOPE" snapshot -p "$pid" >"$work/jit-snap.txt" 2>&1
	check "jit: ruby $ver: snapshot says YJIT is on" grep -q '^YJIT on: a frame running JIT code shows its line as ?$' "$work/jit-snap.txt"
	"$RBSCOPE" snapshot -p "$pid" --json >"$work/jit-snap.json" 2>&1
	check "jit: ruby $ver: snapshot --json says YJIT is on" grep -q '"jit":"YJIT"' "$work/jit-snap.json"
	# 8 s at 250 Hz: some 2,000 samples, a few hundred of each kind of call.
	"$RBSCOPE" record -p "$pid" -r 250 -d 8 --raw "$work/jit.raw" -f collapsed -o "$work/jit.col" 2>"$work/jit.err"
	local out rc
	out=$(ruby "$top/tests/integration/ruby/jit-stacks.rb" "$work/jit.col" "$jit_prog")
	rc=$?
	check "jit: ruby $ver: every frame present, each caller at the line of its call, the running frame's line its own or ? ($(echo "$out" | tail -n 1))" \
		test $rc = 0
	[ "$(echo "$out" | wc -l)" -gt 1 ] && echo "$out" | head -n 10 | sed 's/^/# /'
	check "jit: ruby $ver: record says YJIT is on and how many samples ran JIT code ($(grep -o 'YJIT on.*samples' "$work/jit.err"))" \
		grep -q '^rbscope: YJIT on: [1-9][0-9]* of [0-9]* thread samples ran JIT code in their innermost Ruby frame, its method known and its line not (shown as ?)$' "$work/jit.err"
	# The line unknown in every format: "?" in text ones, no line in pprof's and Firefox's.
	"$RBSCOPE" report -i "$work/jit.raw" -f summary-by-line -o "$work/jit-lines.txt" 2>/dev/null
	check "jit: ruby $ver: summary-by-line shows the running frame's unknown line as path:? (method)" \
		grep -q " ${jit_prog}:? (Object#spread)$" "$work/jit-lines.txt"
	"$RBSCOPE" report -i "$work/jit.raw" -f firefox -o "$work/jit-ff.json" 2>/dev/null
	check "jit: ruby $ver: Firefox's function names say the line is unknown" \
		grep -q "\"Object#spread (${jit_prog}:?)\"" "$work/jit-ff.json"
	stop_ruby "$pid"
}
for ver in $RUBIES_JIT; do
	jit_frames "$ver"
	jit_frames "$ver" "--yjit --yjit-call-threshold=1" # (every method compiled at its first call)
done

# Threads parked in compiled code (every method compiled at its first call) against their own
# Thread#backtrace_locations, frame by frame, as cores.sh checks the interpreter: every frame there, named and at
# the line Ruby gives.
for ver in $RUBIES_JIT; do
	if ! jit_flags="--yjit --yjit-call-threshold=1" start_ruby "$ver" "$top/tests/integration/ruby/backtraces.rb"; then
		skipped "jit: ruby $ver: parked threads: cannot start it ($(tail -n 1 "$work/chroot.err" 2>/dev/null))"
		continue
	fi
	"$RBSCOPE" snapshot -p "$pid" --json >"$work/jit-bt.json" 2>"$work/e"
	ruby "$top/tests/integration/ruby/compare-backtraces.rb" "/tmp/rbscope-backtraces-$pid.json" "$work/jit-bt.json" \
		>"$work/jit-bt.txt" 2>&1
	rc=$?
	check "jit: ruby $ver, every method compiled: snapshot agrees frame by frame with Thread#backtrace_locations ($(tail -n 1 "$work/jit-bt.txt")$([ $rc = 0 ] || head -n 2 "$work/jit-bt.txt" | tr -s ' ' | cut -c1-300))" \
		test $rc = 0
	stop_ruby "$pid"
done

# The running frame's line from the JIT's own tables (3.1's YJIT): jit-lines.rb's method runs two loops, each on a
# line of its own, and times them. Its samples (its frame anywhere in the stack: Integer#* is a C method it calls
# from the second loop) split between the two lines as its own time does, within 2 pp, in the default recording (the
# ip its CPU took with the stack) and in --blocking's (the stopped thread's registers), both at once; and at most a
# fifth of them are left at "?" (read from outside, or caught in the kernel).
if start_ruby 3.1+yjit "$top/tests/integration/ruby/jit-lines.rb"; then
	kill -USR1 "$pid"
	"$RBSCOPE" record -p "$pid" -r 400 -d 8 --blocking -f collapsed -o "$work/jl-b.col" 2>"$work/jl-b.err" &
	bp=$!
	"$RBSCOPE" record -p "$pid" -r 400 -d 8 -f collapsed -o "$work/jl-d.col" 2>"$work/jl-d.err"
	wait $bp
	kill -USR1 "$pid"
	await_true 50 sh -c "test \$(grep -c '^times' '$work/ruby-3.1+yjit.out') -ge 2"
	stop_ruby "$pid"
	own=$(awk '/^times/ { if (n++) printf "%.2f", 100 * ($2 - a) / ($2 - a + $3 - b); else { a = $2; b = $3 } }' "$work/ruby-3.1+yjit.out")
	la=$(grep -n '(loop A)' "$top/tests/integration/ruby/jit-lines.rb" | cut -d: -f1)
	lb=$(grep -n '(loop B)' "$top/tests/integration/ruby/jit-lines.rb" | cut -d: -f1)
	for f in d b; do
		got=$(awk -v la="$la" -v lb="$lb" '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, fr, ";")
			for (i = 1; i <= k; i++) if (fr[i] ~ /^Object#two \(/) { l = fr[i]; sub(/.*:/, "", l); sub(/\)$/, "", l); c[l] += n; t += n } }
			END { if (t && c[la] + c[lb]) printf "%.2f %d %d %d", 100 * c[la] / (c[la] + c[lb]), c[la], c[lb], t }' "$work/jl-$f.col")
		what=record
		[ $f = b ] && what="record --blocking"
		check "jit: ruby 3.1+yjit: $what: the running frame's line from YJIT's tables: the two loops' lines share the method's samples as its own time does, within 2 pp (loop A $got; own $own), a fifth at most unknown" \
			awk -v g="$got" -v o="$own" 'BEGIN { n = split(g, a, " "); d = a[1] - o
				exit !(n == 4 && o != "" && d * d <= 4 && a[2] + a[3] >= 0.8 * a[4] && a[4] >= 1000) }'
	done
	check "jit: ruby 3.1+yjit: record says how many lines YJIT's tables gave ($(grep -o "gave the line of [0-9]* of the [0-9]*" "$work/jl-d.err"))" \
		grep -q "^rbscope: YJIT's own tables gave the line of [1-9][0-9]* of the [0-9]* innermost frames" "$work/jl-d.err"
else
	skipped "jit: ruby 3.1+yjit: lines from YJIT's tables: cannot start the program"
fi

# --native over JIT code (3.1 --yjit; the 3.3 build has no zlib): a method YJIT compiled calls a C method running libz
# straight from its code. The JIT's code is one frame between the C method and the native functions it called (the
# unwind stops there: JIT code has no CFI), in most samples of that C method.
if start_ruby 3.1+yjit "$top/tests/integration/ruby/jit-native.rb"; then
	"$RBSCOPE" record -p "$pid" --native -r 200 -d 3 -f collapsed -o "$work/jit-native.col" 2>"$work/jit-native.err"
	stop_ruby "$pid"
	share=$(awk '/Zlib::Deflate\.deflate \(/ { n += $NF; if ($0 ~ /Zlib::Deflate\.deflate \([^)]*\);\(JIT code\) \(\[jit\]\);.*;deflate \(libz/) j += $NF }
		END { printf "%d of %d", j, n }' "$work/jit-native.col")
	check "jit: ruby 3.1+yjit: --native: (JIT code) between Zlib::Deflate.deflate and libz's deflate ($share samples)" \
		awk -v s="$share" 'BEGIN { split(s, a, " of "); exit !(a[2] >= 100 && a[1] >= 0.8 * a[2]) }'
else
	skipped "jit: ruby 3.1+yjit: --native: cannot start the program"
fi

# A JIT turned on in a running process (RubyVM::YJIT.enable, 3.3+: Rails 7.2's way): said from then on.
if jit_flags="" start_ruby 3.3+yjit "$top/tests/integration/ruby/jit-later.rb"; then
	"$RBSCOPE" snapshot -p "$pid" >"$work/jit-off.txt" 2>&1
	check "jit: ruby 3.3+yjit: before RubyVM::YJIT.enable, snapshot says no JIT" sh -c "grep -q '^Process' '$work/jit-off.txt' && ! grep -q 'JIT' '$work/jit-off.txt'"
	"$RBSCOPE" record -p "$pid" -r 100 -d 3 -f summary -o /dev/null 2>"$work/jit-later.err" &
	rp=$!
	sleep 1
	kill -USR1 "$pid"
	wait $rp
	check "jit: ruby 3.3+yjit: turned on during a recording, record says so ($(grep -o 'YJIT on.*recording)' "$work/jit-later.err"))" \
		grep -q '^rbscope: YJIT on (turned on during the recording): [1-9][0-9]* of' "$work/jit-later.err"
	stop_ruby "$pid"
else
	skipped "jit: ruby 3.3+yjit: cannot start it ($(tail -n 1 "$work/chroot.err" 2>/dev/null))"
fi
