# record.sh: recordings as production needs them: outputs checked before sampling, --raw written as it goes,
# the command's exit status, ticks free of aliasing, Ruby children named (sourced by run).

if start_ruby 3.1 "$workload"; then
	# Outputs are checked before sampling starts: a recording is never made only to be lost.
	start_ns=$(date +%s%N)
	"$RBSCOPE" record -p "$pid" -d 30 -o "$work/nodir/x.svg" 2>"$work/e"; rc=$?
	ms=$((($(date +%s%N) - start_ns) / 1000000))
	check "record: -o in a missing directory: exit 9 in ${ms} ms (before -d 30 ran), one line naming it" \
		sh -c "test $rc = 9 && test $ms -lt 1000 && grep -q \"cannot write '$work/nodir/x.svg'\" '$work/e' && test \$(wc -l <'$work/e') = 1"
	"$RBSCOPE" record -p "$pid" -d 30 -o "$work/good.svg" --raw "$work/nodir/r.raw" 2>"$work/e"; rc=$?
	check "record: a bad --raw: exit 9 at once, and the good -o is not left behind empty" \
		sh -c "test $rc = 9 && grep -q 'nodir/r.raw' '$work/e' && test ! -e '$work/good.svg'"
	"$RBSCOPE" record -p "$pid" -d 30 -o "$work/x.unknownext" 2>"$work/e"; rc=$?
	check "record: -o with an ending that names no format: exit 2, the endings and -f listed" \
		sh -c "test $rc = 2 && grep -q '.speedscope.json' '$work/e' && grep -q -- '-f FORMAT' '$work/e' && test ! -e '$work/x.unknownext'"
	echo "the user's own file" >"$work/keep.svg"
	"$RBSCOPE" record -p 999999 -o "$work/keep.svg" 2>/dev/null
	check "record: a recording that cannot start leaves an existing -o file as it was" \
		grep -q "the user's own file" "$work/keep.svg"

	# --raw is written as the recording goes: a recorder killed in the middle leaves a readable recording.
	"$RBSCOPE" record -p "$pid" -r 500 -o "$work/k.svg" --raw "$work/k.raw" 2>/dev/null &
	rp=$!
	sleep 2.5
	size=$(stat -c %s "$work/k.raw" 2>/dev/null || echo 0)
	kill -9 $rp
	wait $rp 2>/dev/null
	check "record: --raw holds samples while recording (${size} bytes after 2.5 s)" test "$size" -gt 10000
	"$RBSCOPE" report -i "$work/k.raw" -f collapsed -o "$work/k.col" 2>"$work/e"; rc=$?
	check "record: a --raw whose recorder was killed reads, with a note that it ends early" \
		sh -c "test $rc = 0 && grep -q 'Deep\\.spin' '$work/k.col' && grep -q 'ends early' '$work/e'"
	stop_ruby "$pid"
fi

# The command's own exit status, once its profile is written.
"$RBSCOPE" record -r 200 -f collapsed -o "$work/cmd.txt" -- ruby -e 'def w; 100_000.times { |i| i.to_s }; end; 3.times { w }; exit 7' 2>"$work/e"; rc=$?
check "record -- CMD: exits with CMD's status (7) after writing its profile" \
	sh -c "test $rc = 7 && grep -q 'Object#w' '$work/cmd.txt'"

# --no-bpf: every thread read from outside, as asked (no BPF line). As a user without the privileges BPF needs,
# the same, with one line saying why.
if start_ruby 3.1 "$top/bench/ruby/leafcall.rb"; then
	"$RBSCOPE" record -p "$pid" -r 200 -d 1 --no-bpf -f summary -o "$work/leaf-n.txt" 2>"$work/leaf-n.err"; rc=$?
	check "record --no-bpf: a profile, every thread read from outside" \
		sh -c "test $rc = 0 && grep -q 'Item#==' '$work/leaf-n.txt' && ! grep -q 'BPF\|from outside' '$work/leaf-n.err'"
	stop_ruby "$pid"
fi
nobody_dir=$(mktemp -d /tmp/rbscope-nobody.XXXXXX)
cp "$RBSCOPE" "$top/bench/ruby/leafcall.rb" "$nobody_dir/" && chmod 755 "$nobody_dir" && chown -R nobody "$nobody_dir"
(cd "$nobody_dir" && setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
	./rbscope record -r 200 -d 1 -f summary -o leaf-u.txt -- ruby leafcall.rb) 2>"$work/leaf-u.err" >/dev/null
check "record as a user without CAP_BPF: a profile, and one line saying every thread was read from outside and why ($(grep -o 'outside.*' "$work/leaf-u.err" | head -n 1))" \
	sh -c "grep -q 'Item#==' '$nobody_dir/leaf-u.txt' && grep -q '^rbscope: every thread read from outside, short calls undercounted (as --no-bpf): cannot load the BPF program: .*(it needs root, or CAP_BPF and CAP_PERFMON)$' '$work/leaf-u.err'"
rm -rf "$nobody_dir"

# A process with Ruby children, recorded without -s: a hint names them.
if start_ruby 3.1 "$top/tests/integration/ruby/forks.rb"; then
	"$RBSCOPE" record -p "$pid" -r 100 -d 0.5 -f collapsed -o /dev/null 2>"$work/e"
	check "record: without -s, a hint names the Ruby children left out" \
		grep -q "^hint: process $pid has 2 Ruby child processes (.*forks.rb worker.*), not read: -s/--subprocesses" "$work/e"
	stop_ruby "$pid"
	pkill -f 'forks.rb worker'
fi

# Processes as they are in production: a forked worker's main thread is its own (tid and kernel state), and
# the threads of a process in another pid namespace carry the tids and states the host sees.
if start_ruby 3.1 "$top/tests/integration/ruby/forks.rb"; then
	worker=$(pgrep -f 'forks.rb worker' | head -n 1)
	"$RBSCOPE" snapshot -p "$worker" >"$work/worker.txt" 2>&1
	check "forked worker: its main thread has the worker's tid and a kernel state" \
		grep -q "^Thread 1 \"main\" tid=$worker running (kernel: [RS])" "$work/worker.txt"
	c0=$(cpu_ns "$worker" "$worker")
	"$RBSCOPE" record -p "$worker" --on-cpu -r 200 -d 1 -f collapsed -o "$work/worker.col" 2>/dev/null
	set -- $(on_cpu_share "$work/worker.col" 'Worker#work' "$c0" "$(cpu_ns "$worker" "$worker")" 200)
	check "forked worker: record --on-cpu samples its busy main thread: $1% of the samples its CPU time stands for ($2 ms, attaching included), at least 70%" \
		test "$1" -ge 70 -a "$2" -ge 100
	stop_ruby "$pid"
	pkill -f 'forks.rb worker'
fi
if command -v unshare >/dev/null && unshare --pid --fork --mount-proc true 2>/dev/null; then
	unshare --pid --fork --mount-proc ruby "$workload" >"$work/ns.out" 2>&1 &
	upid=$!
	pids="$pids $upid"
	await_ready "$work/ns.out" $upid
	nspid=$(pgrep -P $upid -f workload.rb | head -n 1)
	"$RBSCOPE" snapshot -p "$nspid" >"$work/ns.txt" 2>&1
	bad=$(grep '^Thread' "$work/ns.txt" | sed -n 's/.* tid=\([0-9]*\) .*/\1/p' | while read -r tid; do
		[ -d "/proc/$nspid/task/$tid" ] || echo "$tid"; done)
	check "pid namespace, from the host: 7 threads, each with a host tid ($(echo $bad)) and a kernel state" \
		sh -c "test \$(grep -c '^Thread' '$work/ns.txt') = 7 && test -z '$bad' && ! grep -q 'kernel: ?' '$work/ns.txt'"
	spin=$(awk '/^Thread/ { sub(/.* tid=/, ""); sub(/ .*/, ""); t = $0 } /Deep\.spin/ && t { print t; exit }' "$work/ns.txt")
	c0=$(cpu_ns "$nspid" "${spin:-0}")
	"$RBSCOPE" record -p "$nspid" --on-cpu -r 200 -d 1 -f collapsed -o "$work/ns.col" 2>/dev/null
	set -- $(on_cpu_share "$work/ns.col" 'Deep\.spin' "$c0" "$(cpu_ns "$nspid" "${spin:-0}")" 200)
	check "pid namespace, from the host: record --on-cpu samples the running thread (tid ${spin:-?}): $1% of the samples its CPU time stands for ($2 ms, attaching included), at least 70%" \
		test "$1" -ge 70 -a "$2" -ge 100
	nsenter --target "$nspid" --pid --mount "$RBSCOPE" snapshot -p 1 >"$work/ns-in.txt" 2>&1
	check "pid namespace, from inside it: the process is pid 1, its threads the namespace's tids" \
		sh -c "grep -q '^Thread 1 \"main\" tid=1 running' '$work/ns-in.txt' && test \$(grep -c '^Thread' '$work/ns-in.txt') = 7 && ! grep -q 'kernel: ?' '$work/ns-in.txt'"
	kill -9 "$nspid" 2>/dev/null
	stop_ruby $upid
else
	skipped "pid namespace: unshare --pid is not available here"
fi

# top in a real terminal (tmux): a header, then only the busiest rows that fit; keys sort and filter. By total,
# "block in <main>" leads: 5 threads of 7 (71.43%; the spinning one is sampled by its own CPU's clock, so about).
# screen_until FILE COND: capture the pane into FILE until the shell condition COND holds (10 s at most);
# a slow machine draws late, so the screen is polled rather than read once after a fixed sleep.
screen_until() {
	for _ in $(seq 50); do
		tmux -S "$sock" capture-pane -p -t top >"$1" 2>/dev/null
		sh -c "$2" && return 0
		sleep 0.2
	done
	echo "# screen was:" >&2; sed 's/^/#   /' "$1" >&2
	return 1
}
if command -v tmux >/dev/null && start_ruby 3.1 "$workload"; then
	sock="$work/tmux.sock"
	# 80 columns: narrower than its longest rows (labels with their paths), which must be cut, not wrapped
	tmux -S "$sock" new-session -d -s top -x 80 -y 15 "$RBSCOPE top -p $pid -i 0.3"
	# (a live view: its first refreshes may rank on a handful of samples; wait for the picture to settle)
	screen_until "$work/top1.txt" "sed -n 6p '$work/top1.txt' | grep -q 'Kernel#sleep'"
	check "top in a 15x80 terminal: the header first, the threads' states, the VM's GC, then the busiest rows, long rows cut, nothing past the screen ($(sed -n 2p "$work/top1.txt" | tr -s ' '); $(sed -n 6p "$work/top1.txt" | tr -s ' '))" \
		sh -c "head -n 1 '$work/top1.txt' | grep -q '^rbscope top - pid $pid - by self - all samples' &&
			sed -n 2p '$work/top1.txt' | grep -Eq '^states: running [0-9.]+%, GVL wait [0-9.]+%, blocked [0-9.]+%, idle [1-9][0-9.]*%' &&
			sed -n 3p '$work/top1.txt' | grep -Eq '^gc: [0-9]+ collections' &&
			sed -n 6p '$work/top1.txt' | grep -q 'Kernel#sleep' && test \$(grep -Ec '^ *[0-9.]+% ' '$work/top1.txt') -le 9"
	check "top in 80 columns: rows fit, their paths cut at the start, not the end ($(grep -m 1 '(\.\.\.' "$work/top1.txt" | tr -s ' '))" \
		sh -c "grep -q ' (\.\.\.[^ ]*workload\.rb)\$' '$work/top1.txt' && ! awk 'NR > 5 && length(\$0) >= 79 && !/\)\$/ { bad = 1 } END { exit !bad }' '$work/top1.txt'"
	tmux -S "$sock" send-keys -t top t
	# (its share is of every sample since top started: a few hundred at first, whose count for the thread that
	# holds the GVL, sampled on its CPU and at the ticks that find it off it, still varies; polled until settled)
	screen_until "$work/top2.txt" "head -n 1 '$work/top2.txt' | grep -q ' - by total - ' &&
		sed -n 6p '$work/top2.txt' | awk '/block in <main>/ { t = \$2 + 0 } END { exit !(t >= 66 && t <= 77) }'"
	check "top: key t sorts by total ($(sed -n 6p "$work/top2.txt" | tr -s ' '))" sh -c "head -n 1 '$work/top2.txt' | grep -q ' - by total - ' &&
		sed -n 6p '$work/top2.txt' | awk '/block in <main>/ { t = \$2 + 0 } END { exit !(t >= 66 && t <= 77) }'"
	tmux -S "$sock" send-keys -t top c
	screen_until "$work/top3.txt" "head -n 1 '$work/top3.txt' | grep -q 'on-CPU samples' && grep -q 'Deep\.spin' '$work/top3.txt'"
	check "top: key c keeps on-CPU samples only (the spinning thread, no sleeping one)" \
		sh -c "head -n 1 '$work/top3.txt' | grep -q 'on-CPU samples' && grep -q 'Deep\.spin' '$work/top3.txt' && ! grep -q 'Kernel#sleep' '$work/top3.txt'"
	tmux -S "$sock" send-keys -t top q
	for _ in $(seq 25); do tmux -S "$sock" has-session -t top 2>/dev/null || break; sleep 0.2; done
	check "top: key q quits" sh -c "! tmux -S '$sock' has-session -t top 2>/dev/null"
	tmux -S "$sock" kill-server 2>/dev/null
	"$RBSCOPE" top -p "$pid" -i 0.5 -n 1 --rows 3 >"$work/top4.txt" 2>&1
	check "top --rows 3, not a terminal: 3 rows and how many more" \
		sh -c "test \$(grep -Ec '^ *[0-9.]+% +[0-9.]+% ' '$work/top4.txt') = 3 && grep -q '^([0-9]* more)$' '$work/top4.txt'"
	stop_ruby "$pid"
elif ! command -v tmux >/dev/null; then
	skipped "top in a terminal: tmux is not installed"
fi

# Attached a moment after it started (a worker just forked, a command a script just ran): rbscope waits for its
# VM to be made; a process not Ruby is refused at once.
attached=0
for i in 1 2 3 4 5; do
	ruby -e 'x = 0; loop { x += 1 }' &
	young=$!
	"$RBSCOPE" snapshot -p $young >"$work/young.txt" 2>&1 && grep -q '^Thread 1 "main"' "$work/young.txt" && attached=$((attached + 1))
	stop_ruby $young
done
sleep 5 &
notruby=$!
t0=$(date +%s%N)
"$RBSCOPE" snapshot -p $notruby >/dev/null 2>"$work/young.err"; rc=$?
t1=$(date +%s%N)
kill $notruby 2>/dev/null
check "snapshot of a Ruby a moment after it started: waits for its VM ($attached of 5); a young process not Ruby refused at once (exit $rc, $(( (t1 - t0) / 1000000 )) ms)" \
	sh -c "test $attached = 5 && test $rc = 5 && test $(( (t1 - t0) / 1000000 )) -lt 1000"
for ver in $RUBIES; do
	start_ruby "$ver" "$top/tests/integration/ruby/gc.rb" || continue
	"$RBSCOPE" record -p "$pid" -r 500 -d 2 -f collapsed -o "$work/gc-$ver.col" 2>/dev/null
	ours=$(awk '{ n = $NF; total += n; if ($0 ~ /\(garbage collection/) gc += n } END { printf "%.2f", 100 * gc / total }' "$work/gc-$ver.col")
	check "gc: ruby $ver: GC frames with their phase (${ours}% of the samples)" \
		sh -c "grep -q ';(garbage collection: marking)' '$work/gc-$ver.col' && grep -q ';(garbage collection: sweeping)' '$work/gc-$ver.col'"
	"$RBSCOPE" record -p "$pid" -r 500 -d 2 -f summary-by-line -o "$work/gc-lines.txt" 2>/dev/null
	"$RBSCOPE" snapshot -p "$pid" >"$work/gc-snap.txt"
	for _ in $(seq 100); do grep -q 'garbage collection' "$work/gc-snap.txt" && break; "$RBSCOPE" snapshot -p "$pid" >"$work/gc-snap.txt"; done
	check "gc: ruby $ver: summary-by-line names GC by its phase, not as a line ':0'; snapshot prints no '(?:0)' ($(grep -m 1 'garbage' "$work/gc-snap.txt"))" \
		sh -c "grep -q '  (garbage collection: ' '$work/gc-lines.txt' && ! grep -q ' :0$' '$work/gc-lines.txt' &&
			grep -q '^    (garbage collection' '$work/gc-snap.txt' && ! grep -q '(?:0)' '$work/gc-snap.txt'"
	stop_ruby "$pid"
done

# Long thread names (and names in UTF-8) keep the per-thread table's columns in place: the name is cut, its tid kept.
ruby -e 'Thread.new { Thread.current.name = "a-very-long-thread-name-for-a-worker-pool-thread-7"; sleep }
	Thread.new { Thread.current.name = (["\u00fcn\u00efc\u00f6d\u00e9"] * 5).join("-"); sleep } # (escapes: any locale)
	Thread.new { Thread.current.name = "short"; sleep }; puts "ready"; $stdout.flush; sleep' >"$work/names.out" 2>&1 &
names_pid=$!
pids="$pids $names_pid"
if await_ready "$work/names.out" $names_pid; then
	"$RBSCOPE" record -p $names_pid -d 0.5 -f summary -o "$work/names.txt" 2>/dev/null
	# the column where each row's sample count ends, in characters
	ends=$(sed -n '/^thread /,$p' "$work/names.txt" | ruby -ne 'puts $_.index(/ +\d+ +\d+\.\d%/) ? $_ =~ /\d+(?= +\d+\.\d%)/ && $~.end(0) : $_.index("samples") + 7' | sort -u | tr '\n' ' ')
	check "summary: long and UTF-8 thread names cut with their tids kept, the columns in place (sample counts end at: $ends)" \
		sh -c "test \$(echo $ends | wc -w) = 1 && grep -q '^a-very-long-thr[a-z-]*\.\.\. (tid [0-9]*) ' '$work/names.txt' && grep -q '^ünïcödé-ünïcödé-[^ ]*\.\.\. (tid [0-9]*) ' '$work/names.txt'"
fi
stop_ruby $names_pid
