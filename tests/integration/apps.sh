# apps.sh: real applications from Debian: a Sinatra app on Puma in cluster mode under wrk (loopback, bounded), also
# through rbscope serve, and rubocop, CPU-bound over Ruby's standard library (sourced by run).

apps=$top/tests/integration/apps
missing=""
for cmd in puma wrk rubocop; do command -v $cmd >/dev/null || missing="$missing $cmd"; done
ruby -e 'require "sinatra/base"' 2>/dev/null || missing="$missing ruby-sinatra"
if [ -n "$missing" ]; then
	skipped "apps: not installed:$missing"
else
	port=$((20000 + $$ % 20000))
	(cd "$apps" && RBSCOPE_TEST_PORT=$port exec puma -C puma.rb config.ru) >"$work/puma.out" 2>&1 &
	master=$!
	pids="$pids $master"
	for _ in $(seq 100); do [ "$(grep -c 'booted in' "$work/puma.out")" -ge 2 ] && break; sleep 0.1; done
	workers=$(pgrep -P $master | tr '\n' ' ')
	# load SECS: load from wrk for SECS seconds, in the background, bounded (wrk stops by itself), loopback only.
	load() {
		wrk -t2 -c8 -d"$1"s "http://127.0.0.1:$port/json" >>"$work/wrk.out" 2>&1 &
		wrkpid=$!
		sleep 0.5
	}
	load 5

	"$RBSCOPE" record -p $master -s -r 200 -d 4 -f collapsed -o "$work/puma.col" --raw "$work/puma.raw" 2>"$work/puma.err"
	# --raw of several processes, each sampled on its own CPU too (their captures come in out of time order):
	# report reads every sample back.
	"$RBSCOPE" report -i "$work/puma.raw" -f collapsed -o "$work/puma-report.col" 2>"$work/puma-report.err"
	rc=$?
	rec_total=$(awk '{ n += $NF } END { print n + 0 }' "$work/puma.col")
	rep_total=$(awk '{ n += $NF } END { print n + 0 }' "$work/puma-report.col")
	check "apps: puma cluster, -s --raw: report reads every sample back (exit $rc; $rep_total of $rec_total samples$(head -c 120 "$work/puma-report.err"))" \
		sh -c "test $rc = 0 && test $rec_total -gt 1000 && test $rep_total = $rec_total && ! test -s '$work/puma-report.err'"
	nworkers=$(grep -o '^process [0-9]* puma: cluster worker' "$work/puma.col" | sort -u | wc -l)
	check "apps: puma cluster, -s: both workers sampled, each under its own process root ($nworkers)" test "$nworkers" = 2
	check "apps: puma cluster: the route's frame (GET /json) under load ($(grep -c 'GET /json (' "$work/puma.col") stacks; $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/json"))" \
		grep -q "GET /json (" "$work/puma.col"
	check "apps: puma cluster: GC frames with their phase" grep -q ';(garbage collection: \(marking\|sweeping\))' "$work/puma.col"
	unknown=$(awk '{ n = $NF; t += n; if ($0 ~ /\(unknown/) u += n } END { printf "%.2f", 100 * u / t }' "$work/puma.col")
	check "apps: puma cluster: (unknown ...) frames in ${unknown}% of samples (<= 0.1%)" \
		awk -v u="$unknown" 'BEGIN { exit !(u <= 0.1) }'

	w=${workers%% *}
	"$RBSCOPE" snapshot -p "$w" >"$work/worker.txt" 2>&1
	check "apps: puma worker: its main thread has the worker's own tid, every thread a kernel state" \
		sh -c "grep -q '^Thread 1 \"main\" tid=$w ' '$work/worker.txt' && ! grep -q 'kernel: ?' '$work/worker.txt'"
	wait $wrkpid
	load 3
	"$RBSCOPE" record -p $master -s --on-cpu -r 500 -d 2 -f collapsed -o "$work/worker.col" 2>"$work/oncpu.err"
	waiting=$(grep -E '(Kernel#sleep|IO\.select|ConditionVariable#wait|Mutex#sleep|NIO::Selector#select) \([^;]*\) [0-9]+$' "$work/worker.col" | head -n 1)
	check "apps: puma workers, --on-cpu: request code on CPU ($(grep -c 'GET /json\|JSON.generate' "$work/worker.col") of $(grep -c . "$work/worker.col") stacks; $(tail -n 1 "$work/oncpu.err")), no thread that waits (${waiting:-none})" \
		sh -c "grep -q 'GET /json\|JSON.generate' '$work/worker.col' && test -z '$waiting'"
	# --mode cpu against the kernel's own account of a worker's threads under load (a thread waiting for a CPU,
	# on this 2-core machine with wrk, is not on one): each thread's share within 3 pp; by default and --blocking.
	# (/proc is read before and after the command: 5 s keep the time it attaches, unsampled, small beside them.)
	wait $wrkpid
	load 13
	for how in "" --blocking; do
		cpu_times "$w" >"$work/wcpu0"
		"$RBSCOPE" record -p "$w" -r 200 -d 5 --mode cpu $how -f summary -o "$work/wcpu.txt" 2>"$work/wcpu.err"
		cpu_times "$w" >"$work/wcpu1"
		gap=$(cpu_share_gap "$work/wcpu.txt" "$work/wcpu0" "$work/wcpu1")
		check "apps: puma worker under load, --mode cpu ${how:-(BPF)}: each thread's share within 3 pp of its share of the kernel's CPU time (largest gap $gap pp; $(grep -c '(tid' "$work/wcpu.txt") threads; File.exist? $(awk '$NF == "File.exist?" || / File\.exist\? / { print $1; exit }' "$work/wcpu.txt"))" \
			awk -v g="$gap" 'BEGIN { exit !(g != "none" && g <= 3) }'
	done
	# Ticks missed (3000 Hz is more than this machine keeps up with beside wrk) are missed by a worker's busy and
	# idle threads alike: each thread there for the whole recording within 3% of the others' samples (a second
	# recording if the first is not: a busy thread's clock stands still while wrk takes its CPU).
	alike() { grep -o '(tid [0-9]*) *[0-9]*' "$1" | awk '{ v[n++] = $NF; if ($NF > hi) hi = $NF }
		END { for (i = 0; i < n; i++) if (v[i] >= 0.9 * hi) { k++; if (!lo || v[i] < lo) lo = v[i] } exit !(k >= 3 && hi <= lo * 1.03) }'; }
	for try in 1 2; do
		"$RBSCOPE" record -p "$w" -r 3000 -d 3 -f summary -o "$work/wdrop.txt" 2>"$work/wdrop.err"
		alike "$work/wdrop.txt" && break
	done
	counts=$(grep -o '(tid [0-9]*) *[0-9]*' "$work/wdrop.txt" | awk '{ print $NF }' | sort -n | tr '\n' ' ')
	check "apps: puma worker under load at 3000 Hz: ticks missed alike for every thread (try $try; $(grep -o '[0-9]* ticks dropped' "$work/wdrop.err"); samples: $counts)" \
		alike "$work/wdrop.txt"
	"$RBSCOPE" record -p $master -r 100 -d 0.5 -f collapsed -o /dev/null 2>"$work/master.err"
	check "apps: puma master without -s: a hint names its two workers" \
		grep -q "^hint: process $master has 2 Ruby child processes" "$work/master.err"

	wait $wrkpid
	# rbscope serve --all over the cluster under load: a worker's CPU profile through Go's own pprof client, and
	# the master and both workers in /metrics.
	if command -v go >/dev/null; then
		sport=$((port + 7))
		"$RBSCOPE" serve --all -l "127.0.0.1:$sport" 2>"$work/apps-serve.err" &
		sv=$!
		pids="$pids $sv"
		for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$sport/" && break; sleep 0.1; done
		load 8
		w1=${workers%% *}
		PPROF_TMPDIR=$work HOME=$work go tool pprof -raw -seconds 3 "http://127.0.0.1:$sport/debug/pprof/profile?pid=$w1" \
			>"$work/apps-serve.txt" 2>"$work/apps-go.err"
		# Go's default views (no flags) of a worker's wall profile: Ruby's names as they are, not cut at () and <>
		# as pprof cuts demangled C++ names (the route's blocks read 'block  in ', '<main>' '<unknown>').
		PPROF_TMPDIR=$work HOME=$work go tool pprof -top -seconds 3 "http://127.0.0.1:$sport/debug/pprof/wall?pid=$w1" \
			>"$work/apps-top.txt" 2>/dev/null
		saved=$(ls -t "$work"/pprof.*.pb.gz 2>/dev/null | head -n 1)
		PPROF_TMPDIR=$work HOME=$work go tool pprof -traces "$saved" >"$work/apps-traces.txt" 2>/dev/null
		check "apps: serve --all: go tool pprof -top and -traces: '<main>', the route's 'block (2 levels) in <class:ShopApp>', nothing '<unknown>' ($(grep -c 'in <class:ShopApp>' "$work/apps-traces.txt") route block frames)" \
			sh -c "grep -q ' <main>\$' '$work/apps-top.txt' && grep -q 'block (2 levels) in <class:ShopApp>' '$work/apps-traces.txt' &&
				! grep -q '<unknown>\|block  in' '$work/apps-top.txt' '$work/apps-traces.txt'"
		check "apps: serve --all: a Puma worker's CPU profile (go tool pprof) has the route, GET /json, and its labels ($(awk '/^Samples:/ {on = 1} /^Locations/ {on = 0} on && /^ +[0-9]+ +[0-9]+:/ {n += $1} END {print n + 0}' "$work/apps-serve.txt") samples, $(grep -c 'Sinatra::' "$work/apps-serve.txt") Sinatra locations)" \
			sh -c "grep -q 'GET /json' '$work/apps-serve.txt' && grep -q 'pid:\[$w1\]' '$work/apps-serve.txt' && grep -q 'process command:\[puma: cluster worker' '$work/apps-serve.txt'"
		# (by pid: --all also finds any other Ruby this machine runs)
		curl -s "http://127.0.0.1:$sport/metrics" | grep '^rbscope_ruby_info{' >"$work/apps-info.txt"
		n=0
		for p in $master $workers; do grep -q "pid=\"$p\".*command=\"puma" "$work/apps-info.txt" && n=$((n + 1)); done
		check "apps: serve --all: the master and both workers in /metrics ($n of 3)" test "$n" = 3
		kill $sv
		wait $sv 2>/dev/null
		wait $wrkpid
	fi
	# A worker killed while -s records: Puma starts another, and the recording follows it.
	load 9
	"$RBSCOPE" record -p $master -s -r 200 -d 8 -f collapsed -o "$work/respawn.col" 2>"$work/respawn.err" &
	rp=$!
	sleep 1.5
	kill -9 "$w"
	wait $rp
	new=$(pgrep -P $master | grep -v -x -F "$(echo "$workers" | tr ' ' '\n')" | head -n 1)
	check "apps: puma: -s follows the worker Puma starts after one is killed (pid ${new:-none}; $(grep -o '^process [0-9]*' "$work/respawn.col" | sort -u | tr '\n' ' '))" \
		sh -c "test -n '$new' && grep -q '^process $new ' '$work/respawn.col'"
	kill $wrkpid 2>/dev/null
	wait $wrkpid 2>/dev/null
	kill -TERM $master 2>/dev/null
	wait $master 2>/dev/null

	# rubocop over a copy of Ruby's standard library: names, and nothing unknown.
	mkdir -p "$work/rc"
	libdir=$(ruby -e 'print RbConfig::CONFIG["rubylibdir"]')
	cp -r "$libdir/net" "$libdir"/[a-o]*.rb "$work/rc/"
	(cd "$work/rc" && "$RBSCOPE" record -r 500 -f collapsed -o "$work/rubocop.col" -- rubocop --cache false --format offenses . \
		>/dev/null 2>"$work/rubocop.err")
	unknown=$(awk '{ n = $NF; t += n; if ($0 ~ /\(unknown/) u += n } END { printf "%.2f", t ? 100 * u / t : 100 }' "$work/rubocop.col")
	check "apps: rubocop: its own methods named (RuboCop::Cop::Commissioner, Parser::Lexer#advance), GC frames" \
		sh -c "grep -q 'RuboCop::Cop::Commissioner#' '$work/rubocop.col' && grep -q 'Parser::Lexer#advance' '$work/rubocop.col' &&
			grep -q '(garbage collection: ' '$work/rubocop.col'"
	# where they were, should there be any: the frame under each, most samples first
	under=$(awk '/\(unknown/ { n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); for (i = 2; i <= k; i++) if (f[i] ~ /^\(unknown/) c[f[i - 1] " > " f[i]] += n }
		END { for (x in c) print c[x], x }' "$work/rubocop.col" | sort -rn | head -n 3 | tr '\n' ';')
	check "apps: rubocop: (unknown ...) frames in ${unknown}% of samples (<= 0.1%)${under:+: $under}" awk -v u="$unknown" 'BEGIN { exit !(u <= 0.1) }'
	# stacks kept with frames left out after moving under the read (re-read up to twice first)
	salv=$(awk '/ samples in / { s = $2 } match($0, /[0-9]+ stacks salvaged,/) { v = substr($0, RSTART, RLENGTH) + 0 }
		END { printf "%.2f", s ? 100 * v / s : 100 }' "$work/rubocop.err")
	check "apps: rubocop: stacks salvaged in ${salv}% of samples (<= 5%)" awk -v u="$salv" 'BEGIN { exit !(u <= 5) }'

	# The same under YJIT (3.1 --yjit): every function within 2 pp of --blocking's stopped stacks, read at once at
	# 500 Hz (--blocking starts it, the default attaches as soon as it is there); and no function of more than 1%
	# in the interpreter's profile above missing from it (a JIT frame left out would be).
	(cd "$work/rc" && exec "$RBSCOPE" record -r 500 --blocking -f summary -o "$work/rcj-b.txt" -- ruby --yjit \
		"$(command -v rubocop)" --cache false --format offenses . >/dev/null 2>&1) &
	rp=$! c=""
	for _ in $(seq 500); do c=$(pgrep -P $rp ruby) && break; sleep 0.01; done
	"$RBSCOPE" record -p "${c:-0}" -r 500 -f summary -o "$work/rcj-d.txt" 2>"$work/rcj.err"
	wait $rp
	set -- $(self_gap "$work/rcj-b.txt" "$work/rcj-d.txt")
	gap=${1:-}
	shift 3 2>/dev/null
	check "apps: rubocop under YJIT: every function's self share within 2 pp of --blocking's (largest gap ${gap:-?} pp, $*; $(grep -o 'YJIT on: [0-9]* of [0-9]*' "$work/rcj.err"))" \
		sh -c "grep -q '^rbscope: YJIT on' '$work/rcj.err' && awk -v g='$gap' 'BEGIN { exit !(g != \"\" && g + 0 <= 2) }'"
	# (the interpreter's: the recording above, its self shares from its stacks' innermost frames)
	# (a frame's place, " (path:line)" or " (path)", cut off its name: the path may be "(eval)")
	lost=$(awk 'FNR == 1 { f++ } f == 1 { n = $NF; t += n; sub(/ [0-9]+$/, ""); k = split($0, fr, ";"); leaf = fr[k]
			sub(/ \((\([^()]*\)[^()]*|[^()]*)\)$/, "", leaf); self[leaf] += n }
		f == 2 && FNR > 1 && $1 ~ /%$/ { k = $0; sub(/^ *[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, "", k)
			sub(/ \((\([^()]*\)[^()]*|[^()]*)\)$/, "", k); have[k] = 1 }
		END { for (k in self) if (100 * self[k] / t > 1 && !(k in have)) printf "%s (%.1f%%) ", k, 100 * self[k] / t }' \
		"$work/rubocop.col" "$work/rcj-d.txt")
	check "apps: rubocop under YJIT: no function of more than 1% self in the interpreter's profile missing (${lost:-none})" test -z "$lost"

	# Puma (cluster) + Sinatra under YJIT (RUBYOPT=--yjit reaches the workers), under wrk: the wall profile of both
	# workers beside --blocking's of the same seconds: every function's self share within 2 pp, the request threads'
	# running share within 3 pp (a thread holding the GVL while wrk has its CPU keeps that time: it read 5 pp low
	# when it did not, 0.4-2 pp low now with a build beside); and no
	# function that has more than 1% of the interpreter's request samples (the recording above) missing.
	jport=$((port + 11))
	(cd "$apps" && RUBYOPT=--yjit RBSCOPE_TEST_PORT=$jport exec puma -C puma.rb config.ru) >"$work/pumaj.out" 2>&1 &
	jmaster=$!
	pids="$pids $jmaster"
	for _ in $(seq 100); do [ "$(grep -c 'booted in' "$work/pumaj.out")" -ge 2 ] && break; sleep 0.1; done
	wrk -t2 -c8 -d12s "http://127.0.0.1:$jport/json" >>"$work/wrk.out" 2>&1 &
	wrkpid=$!
	sleep 1
	"$RBSCOPE" record -p $jmaster -s -r 400 -d 8 --blocking -f summary -o "$work/pj-b.txt" --raw "$work/pj-b.raw" 2>/dev/null &
	bp=$!
	"$RBSCOPE" record -p $jmaster -s -r 400 -d 8 -f summary -o "$work/pj-d.txt" --raw "$work/pj-d.raw" 2>"$work/pj.err"
	wait $bp
	kill $wrkpid 2>/dev/null
	wait $wrkpid 2>/dev/null
	kill -TERM $jmaster 2>/dev/null
	wait $jmaster 2>/dev/null
	set -- $(self_gap "$work/pj-b.txt" "$work/pj-d.txt")
	gap=${1:-}
	shift 3 2>/dev/null
	check "apps: puma + sinatra under YJIT: every function's self share within 2 pp of --blocking's (largest gap ${gap:-?} pp, $*; $(grep -o 'YJIT on: [0-9]* of [0-9]*' "$work/pj.err"))" \
		sh -c "grep -q '^rbscope: YJIT on' '$work/pj.err' && awk -v g='$gap' 'BEGIN { exit !(g != \"\" && g + 0 <= 2) }'"
	# (the per-thread table: "NAME (tid N)  SAMPLES  RUNNING% ...", the request threads' "puma srv tp": their samples
	# running over all their samples, in each recording; one thread's share alone varies by 1 pp a recording)
	tgap=$(awk '/puma srv tp .*\(tid [0-9]+\)/ { match($0, /\(tid [0-9]+\) +[0-9]+ +[0-9.]+%/); split(substr($0, RSTART, RLENGTH), f, /[ )%]+/)
			k = FILENAME == ARGV[1] ? 1 : 2; run[k] += f[3] * f[4] / 100; all[k] += f[3]; n[k]++ }
		END { if (!all[1] || !all[2]) { print "none"; exit } printf "%.2f %.2f %d", 100 * run[2] / all[2], 100 * run[1] / all[1], n[2] }' \
		"$work/pj-b.txt" "$work/pj-d.txt")
	set -- $tgap
	check "apps: puma + sinatra under YJIT: the request threads' running share within 3 pp of --blocking's (${1:-?}% against ${2:-?}%, ${3:-0} threads)" \
		awk -v d="${1:-}" -v b="${2:-}" -v n="${3:-0}" 'BEGIN { g = d - b; if (g < 0) g = -g; exit !(n >= 4 && b > 0 && g <= 3) }'
	"$RBSCOPE" report -i "$work/pj-d.raw" -f collapsed -o "$work/pj-d.col" 2>/dev/null
	# (self shares among samples in a request, running: no state over the innermost frame)
	lost=$(awk 'FNR == 1 { f++ } /Puma::Request#handle_request/ { n = $NF; sub(/ [0-9]+$/, ""); k = split($0, a, ";"); leaf = a[k]
			if (leaf ~ /^\(/) next
			sub(/ \((\([^()]*\)[^()]*|[^()]*)\)$/, "", leaf); s[f, leaf] += n; t[f] += n }
		END { for (x in s) { split(x, fk, SUBSEP); if (fk[1] == 1 && 100 * s[x] / t[1] > 1 && !((2, fk[2]) in s)) printf "%s (%.1f%%) ", fk[2], 100 * s[x] / t[1] } }' \
		"$work/puma.col" "$work/pj-d.col")
	check "apps: puma + sinatra under YJIT: no function of more than 1% of the interpreter's request samples missing (${lost:-none})" test -z "$lost"
fi
