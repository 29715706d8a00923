# allocs.sh: `record --mode alloc`, allocations sampled by the agent, on Ruby 3.1 (host), 3.3 and 3.4 (chroots, the
# gem installed there by agent.sh), with the agent preloaded and loaded by --inject. The reference is the workload's
# own count of each site's allocations (the VM's counter read around each call, tests/integration/ruby/allocs.rb).
# Sourced by agent.sh.

# alloc_start VER PRELOAD: allocs.rb on Ruby VER, with the agent loaded from its start if PRELOAD is 1; sets apid.
alloc_start() {
	local ver=$1 out=$work/allocs-$1-$2.out req=
	[ "$2" = 1 ] && req=-rrbscope
	if [ "$ver" = 3.1 ]; then
		RUBYLIB="$top/lib:$ext" ruby $req "$top/tests/integration/ruby/allocs.rb" >"$out" 2>&1 &
	else
		cp "$top/tests/integration/ruby/allocs.rb" "$aroot/tmp/rbscope-it/"
		chroot "$aroot" ruby $req /tmp/rbscope-it/allocs.rb >"$out" 2>&1 &
	fi
	apid=$!
	pids="$pids $apid"
	await_ready "$out" $apid && return 0
	not_ok "allocs: ruby $ver: the workload did not start: $(head -c 300 "$out")"
	return 1
}

# alloc_shares SUMMARY OUT: "planted line class planted' middle class middle' small class small'" (percent):
# the profile's self share of each site's line and of its class, beside the workload's own shares (its last line).
# The small site's hash literal is the last line of its method: Ruby 3.1 itself (ObjectSpace.allocation_sourceline)
# puts such an allocation on the method's `end`, the line after.
alloc_shares() {
	local rb=$top/tests/integration/ruby/allocs.rb
	awk -v out="$2" -v p="$(grep -n 'String.new$' "$rb" | cut -d: -f1)" -v m1="$(grep -n 'x = \[i\]$' "$rb" | cut -d: -f1)" \
		-v s="$(grep -n '{ i => i }$' "$rb" | cut -d: -f1)" '
		/^ *[0-9.]+% .*allocs\.rb:[0-9]+$/ { n = $NF; sub(/.*:/, "", n); line[n] = $1 + 0 }
		/^ *[0-9.]+% +[0-9]+ +[0-9.]+% +[0-9]+  (String|Array|Hash)$/ { cls[$NF] = $1 + 0 }
		END {
			while ((getline l < out) > 0) if (l ~ /^shares /) last = l
			split(last, f, /[ =]/)
			printf "%.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f\n", line[p], cls["String"], f[3] * 100,
				line[m1] + line[m1 + 1], cls["Array"], f[5] * 100, line[s] + line[s + 1], cls["Hash"], f[7] * 100
		}' "$1"
}

# alloc_within SHARES PP: every site's line and class share within PP points of the workload's own.
alloc_within() {
	echo "$1" | awk -v pp="$2" '{ for (i = 0; i < 3; i++) { w = $(3 * i + 3); if (w <= 0) exit 1
		for (j = 1; j <= 2; j++) { d = $(3 * i + j) - w; if (d < -pp || d > pp) exit 1 } } }'
}

for ver in $(rubies_except 2.7); do
	if [ $ver != 3.1 ]; then
		aroot=$("$top/scripts/ruby-chroot" $ver 2>"$work/chroot.err") || { skipped "allocs: ruby $ver: no chroot"; continue; }
		chroot "$aroot" ruby -e 'require "rbscope"' 2>/dev/null || { skipped "allocs: ruby $ver: the gem is not installed"; continue; }
	fi
	for preload in 1 0; do
		how=$([ $preload = 1 ] && echo "the agent preloaded" || echo "--inject")
		alloc_start $ver $preload || continue
		rm -f "$work/al.txt" "$work/al.err" "$work/al.col" "$work/al.pb.gz"
		inj=
		[ $preload = 0 ] && inj=--inject
		[ $preload = 0 ] && [ $ver = 3.1 ] && inj="--inject --agent $top/lib:$ext"
		"$RBSCOPE" record --mode alloc -p $apid -d 3 $inj -f summary-by-line -o "$work/al.txt" 2>"$work/al.err"
		rc=$?
		sleep 1.2 # (the workload's next line of shares, covering the recording)
		shares=$(alloc_shares "$work/al.txt" "$work/allocs-$ver-$preload.out")
		within=$(alloc_within "$shares" 3 && echo yes)
		check "allocs: ruby $ver, $how: the planted site's 70% and the others' 20% and 10%, by line and by class, within 3 pp of the workload's own count (line class own: $shares; exit $rc; $(grep -o '[0-9]* allocations sampled' "$work/al.err"))" \
			test "$rc $within" = "0 yes"
		check "allocs: ruby $ver, $how: the estimated total within 10% of the VM's own count ($(grep -o '[0-9]* objects allocated.*estimated' "$work/al.err"))" \
			awk '/objects allocated \(the VM.s count\), [0-9]+ estimated/ { v = $2; e = $8; ok = e > 0.9 * v && e < 1.1 * v } END { exit !ok }' "$work/al.err"
		# The hook in windows: 2 ms, 1/64 of the time at random (about 23 in 3 s); a timer that never opens one,
		# or a hook left in after its window, reads far from 1.56% (a Poisson count of windows: 0.3% is six deviations off).
		check "allocs: ruby $ver, $how: the hook in for short windows, 0.3-6% of the time ($(grep -o 'the hook was in for.*by design' "$work/al.err"))" \
			awk '/the hook was in for [0-9]+ windows, [0-9.]+ ms of [0-9.]+ s \(/ { n = $7; p = $14; sub(/\(/, "", p); sub(/%;/, "", p)
				ok = n >= 3 && p >= 0.3 && p <= 6 } END { exit !ok }' "$work/al.err"
		if [ $preload = 1 ]; then
			"$RBSCOPE" record --mode alloc -p $apid -d 1 -o "$work/al.pb.gz" 2>"$work/al2.err"
			rc=$?
			go tool pprof -raw "$work/al.pb.gz" >"$work/al.raw" 2>&1
			check "allocs: ruby $ver: pprof: sample types alloc_objects/count and alloc_space/bytes, period one interval, the planted method and String in it (go tool pprof)" \
				sh -c "test $rc = 0 && grep -q '^PeriodType: allocations count' '$work/al.raw' && grep -q '^alloc_objects/count alloc_space/bytes' '$work/al.raw' &&
					grep -q 'alloc_space/bytes' '$work/al.raw' && grep -q ' Object#planted ' '$work/al.raw' && grep -q ' String ' '$work/al.raw'"
			"$RBSCOPE" record --mode alloc --bytes -p $apid -d 1 -f collapsed -o "$work/al.col" 2>"$work/al3.err"
			check "allocs: ruby $ver: --bytes: collapsed stacks weighed in bytes, ending in their class" \
				awk '/;Object#planted .*;String [0-9]+$/ { s += $NF } END { exit !(s > 1000000) }' "$work/al.col"
		fi
		if [ $preload = 1 ]; then
			# top --mode alloc, not on a terminal: a table a second over a 3 s window; the last one's first site
			if [ $ver = 3.1 ]; then
				bad=""
				for args in "--bytes" "--alloc-interval 10" "--mode alloc --native" "--mode alloc --on-cpu"; do
					"$RBSCOPE" top -p $apid -n 1 $args >/dev/null 2>"$work/top-bad.err"
					[ $? = 2 ] && [ "$(wc -l <"$work/top-bad.err")" = 1 ] || bad="$bad [$args]"
				done
				check "allocs: top: the alloc options without --mode alloc, and the sampler's with it: one line, exit 2 (failed:${bad:- none})" test -z "$bad"
			fi
			"$RBSCOPE" top --mode alloc -p $apid -i 1 -w 3 -n 4 >"$work/al-top.txt" 2>"$work/al-top.err"
			rc=$?
			pline=$(grep -n 'String.new$' "$top/tests/integration/ruby/allocs.rb" | cut -d: -f1)
			own=$(tail -n 1 "$work/allocs-$ver-$preload.out" | sed -n 's/.*planted=\([0-9.]*\).*/\1/p')
			first=$(awk '/^rbscope top/ { n = 0; next } /^ *[0-9.]+% / && !n++ { row = $0 } END { print row }' "$work/al-top.txt")
			check "allocs: ruby $ver: top --mode alloc: four tables, the last one's first site the planted line's Strings, its share within 3 pp of the workload's own (${first:-none}; own ${own:-?}; exit $rc)" \
				sh -c "test $rc = 0 && test \$(grep -c '^rbscope top - pid $apid - allocations by objects' '$work/al-top.txt') = 4 &&
					echo '$first' | grep -Eq 'allocs\.rb:$pline String  *Object#planted > (Class#new|String\.new)\$' &&
					awk -v s='$first' -v own='$own' 'BEGIN { split(s, f, \" \"); d = f[1] + 0 - own * 100; exit !(own > 0 && d <= 3 && d >= -3) }'"
		fi
		if [ $preload = 1 ] && [ $ver = 3.1 ]; then
			"$RBSCOPE" record --mode alloc -p $apid -d 1.5 -f summary -o "$work/al-direct.txt" --raw "$work/al.raw" 2>/dev/null
			"$RBSCOPE" report -i "$work/al.raw" -f summary -o "$work/al-report.txt" 2>/dev/null
			check "allocs: --raw: report's summary of the file is the recording's own (objects, bytes, classes)" \
				sh -c "grep -q '^allocations: ' '$work/al-report.txt' && cmp -s '$work/al-direct.txt' '$work/al-report.txt'"
			bad=""
			for fmt in flamegraph html speedscope firefox pprof callgrind collapsed summary-by-line; do
				"$RBSCOPE" report -i "$work/al.raw" -f $fmt -o "$work/al.$fmt" 2>/dev/null && test -s "$work/al.$fmt" || bad="$bad $fmt"
			done
			ruby -rjson -e 'j = JSON.parse(File.read(ARGV[0])); exit(j["profiles"].all? { |p| p["unit"] == "none" } && j["profiles"].sum { |p| p["weights"].sum } > 0)' \
				"$work/al.speedscope" || bad="$bad speedscope-unit"
			grep -q 'objects allocated (estimated)' "$work/al.flamegraph" || bad="$bad flamegraph-title"
			grep -q '^events: Objects' "$work/al.callgrind" || bad="$bad callgrind-event"
			check "allocs: --raw: every format from the file, in objects (failed:${bad:- none})" test -z "$bad"
			if command -v protoc >/dev/null; then
				gzip -dc "$work/al.pprof" | protoc --decode perftools.profiles.Profile -I "$top/tests/data" \
					"$top/tests/data/profile.proto" >"$work/al-pprof.txt" 2>"$work/al-pprof.err"
				# sample values (objects, bytes) summed, against the summary's estimated totals
				sums=$(awk '/^sample \{/ { k = 0 } /^  value: / { v[k++ % 2] += $2 } END { printf "%d %d", v[0], v[1] }' "$work/al-pprof.txt")
				want=$(sed -n 's/^allocations: \([0-9]*\) objects, \([0-9]*\) bytes.*/\1 \2/p' "$work/al-report.txt")
				check "allocs: pprof decodes with protoc: its samples' objects and bytes add up to the summary's ($sums; $want)" \
					sh -c "test -n '$want' && test '$sums' = '$want' && grep -q 'alloc_objects' '$work/al-pprof.txt'"
			fi
			"$RBSCOPE" report -i "$work/al.raw" --bytes -f speedscope -o "$work/al-bytes.json" 2>/dev/null
			check "allocs: report --bytes: speedscope weighed in bytes" \
				ruby -rjson -e 'exit(JSON.parse(File.read(ARGV[0]))["profiles"].all? { |p| p["unit"] == "bytes" })' "$work/al-bytes.json"
		fi
		if [ $preload = 1 ]; then
			"$RBSCOPE" record --mode alloc -p $apid -d 3 -f summary -o "$work/al-first.txt" 2>/dev/null &
			first=$!
			sleep 1
			"$RBSCOPE" record --mode alloc -p $apid -d 1 -f summary -o "$work/al-second.txt" 2>"$work/al-second.err"
			rc=$?
			wait $first
			rc1=$?
			check "allocs: ruby $ver: a second recording while one runs: exit 12, the agent's reason, nothing written; the first unharmed (exit $rc, $rc1; $(head -c 120 "$work/al-second.err"))" \
				sh -c "test $rc = 12 && grep -q 'one recording at a time' '$work/al-second.err' && test ! -e '$work/al-second.txt' &&
					test $rc1 = 0 && grep -q '^allocations: ' '$work/al-first.txt'"
		fi
		sleep 0.5
		before=$(tail -n 1 "$work/allocs-$ver-$preload.out")
		sleep 2.2
		check "allocs: ruby $ver, $how: the process lives on after the recording, its hook gone (a second recording starts)" \
			sh -c "kill -0 $apid && test \"\$(tail -n 1 '$work/allocs-$ver-$preload.out')\" != '$before' &&
				'$RBSCOPE' record --mode alloc -p $apid -d 0.3 -f summary -o /dev/null 2>/dev/null"
		stop_ruby $apid
	done
done

ruby -e '$stdout.sync = true; puts "ready"; sleep' >"$work/noagent.out" 2>&1 &
noagent=$!
pids="$pids $noagent"
await_ready "$work/noagent.out" $noagent
"$RBSCOPE" record --mode alloc -p $noagent -d 1 -o "$work/none.svg" 2>"$work/e"
rc=$?
check "allocs: a Ruby without the agent: exit 11 with a hint naming --inject, nothing written" \
	sh -c "test $rc = 11 && grep -q -- '--inject' '$work/e' && test ! -e '$work/none.svg'"
stop_ruby $noagent
"$RBSCOPE" record --mode alloc --interval 0 -p $$ -o "$work/none.txt" 2>"$work/e"
rc=$?
check "allocs: --interval 0: exit 2 and why" sh -c "test $rc = 2 && grep -q 'positive number of allocations' '$work/e'"
"$RBSCOPE" record --interval 100 -p $$ -o "$work/none.txt" 2>"$work/e"
rc=$?
check "allocs: --interval without --mode alloc: exit 2" sh -c "test $rc = 2 && grep -q 'goes with --mode alloc' '$work/e'"
"$RBSCOPE" record --mode alloc --blocking -p $$ -o "$work/none.txt" 2>"$work/e"
rc=$?
check "allocs: --mode alloc with --blocking: exit 2 and why" sh -c "test $rc = 2 && grep -q 'does not go with it' '$work/e'"

# Allocations inside one long C call (JSON.parse of a big document: millions of objects before Ruby can run the
# agent's job): every sample kept until the job runs, none lost, the total as the VM counts it.
RUBYLIB="$top/lib:$ext" ruby -rrbscope "$top/tests/integration/ruby/bigparse.rb" >"$work/bigparse.out" 2>&1 &
bpid=$!
pids="$pids $bpid"
if await_ready "$work/bigparse.out" $bpid 300; then
	# (--no-windows: in windows a long C call is sampled whole or not at all, as the window it began in says)
	"$RBSCOPE" record --mode alloc --no-windows -p $bpid -d 3 -f summary -o "$work/bigparse.txt" 2>"$work/bigparse.err"
	rc=$?
	check "allocs: --no-windows, inside one long C call (JSON.parse): no sample lost, the estimate within 10% of the VM's count, all under JSON's parser (exit $rc; $(grep -o '[0-9]* objects allocated.*lost' "$work/bigparse.err"))" \
		sh -c "test $rc = 0 && grep -q ' 0 samples lost' '$work/bigparse.err' &&
			awk '/objects allocated \(the VM.s count\), [0-9]+ estimated/ { v = \$2; e = \$8; ok = e > 0.9 * v && e < 1.1 * v } END { exit !ok }' '$work/bigparse.err' &&
			grep -Eq '^ *(100\.00|9[0-9]\.[0-9]+)% .*JSON::Ext::Parser#parse' '$work/bigparse.txt'"
fi
stop_ruby $bpid

# heap live: sampled objects followed until freed. A workload with a planted leak beside churn and a bounded cache
# (tests/integration/ruby/live.rb): the leak's line is the one site that keeps growing.
RUBYLIB="$top/lib:$ext" ruby -rrbscope "$top/tests/integration/ruby/live.rb" >"$work/live.out" 2>&1 &
lpid=$!
pids="$pids $lpid"
if await_ready "$work/live.out" $lpid; then
	leakline=$(grep -n 'LEAK << ' "$top/tests/integration/ruby/live.rb" | cut -d: -f1)
	"$RBSCOPE" heap live -p $lpid -d 16 --every 1 --top 5 -o "$work/live.pb.gz" >"$work/live.txt" 2>"$work/live.err"
	rc=$?
	growing=$(sed -n '/^-- sites that keep growing/,$p' "$work/live.txt" | grep -c '^  [^ ].*: +[0-9]* objects kept')
	check "heap live: the planted leak's line is the one site that keeps growing, of 16 looks (exit $rc; $(sed -n '/^-- sites that keep growing/,$p' "$work/live.txt" | grep '^  [^ ]' | cut -c1-150 | tr '\n' ' '))" \
		sh -c "test $rc = 0 && test $growing = 1 && sed -n '/^-- sites that keep growing/,\$p' '$work/live.txt' | grep -q '^  .*live.rb:$leakline String: +'"
	check "heap live: a look every second" test "$(grep -c '^-- [0-9.]* s: ' "$work/live.txt")" -ge 14
	go tool pprof -raw "$work/live.pb.gz" >"$work/live.raw" 2>&1
	check "heap live -o: what is alive at the end as pprof's inuse_objects/inuse_space, the leak's method in it (go tool pprof)" \
		sh -c "grep -q '^inuse_objects/count inuse_space/bytes' '$work/live.raw' && grep -q ' Object#leak ' '$work/live.raw'"
	check "heap live: the process lives on, its hooks gone (a second heap live starts)" \
		sh -c "kill -0 $lpid && '$RBSCOPE' heap live -p $lpid -d 0.5 --every 0.2 >/dev/null 2>&1"
	# The process exits during a recording: the profile of what was sampled until then, exit 0.
	"$RBSCOPE" record --mode alloc -p $lpid -d 10 -f summary -o "$work/al-gone.txt" 2>"$work/al-gone.err" &
	rp=$!
	sleep 1.5
	stop_ruby $lpid
	wait $rp
	rc=$?
	check "allocs: the process exits mid-recording: exit 0, the profile of what was sampled, and says so (exit $rc; $(tail -n 1 "$work/al-gone.err"))" \
		sh -c "test $rc = 0 && grep -q '^allocations: [1-9]' '$work/al-gone.txt' && grep -q 'exited' '$work/al-gone.err'"
fi
stop_ruby $lpid

# GC.compact moves objects without freeing them: heap live says its figures no longer hold.
RUBYLIB="$top/lib:$ext" ruby -rrbscope -e '$stdout.sync = true; Thread.new { sleep }; puts "ready"; k = []; i = 0
	t = Time.now; loop { "t#{i}"; k << "k#{i}" if i % 50 == 0; i += 1; (GC.compact; t = nil) if t && Time.now - t > 2; sleep 0.001 if i % 2000 == 0 }' \
	>"$work/compact.out" 2>&1 &
cpid=$!
pids="$pids $cpid"
if await_ready "$work/compact.out" $cpid; then
	"$RBSCOPE" heap live -p $cpid -d 4 --every 1 >"$work/compact.txt" 2>&1
	check "heap live: GC.compact during it: every look after says the objects moved are no longer followed" \
		sh -c "grep '^-- 4\.' '$work/compact.txt' | grep -q 'compacted (GC.compact ran 1 time)' && ! grep '^-- 1\.' '$work/compact.txt' | grep -q compacted"
fi
stop_ruby $cpid

# The same in a real server: Sinatra on Puma (cluster), a route that keeps every order's JSON when RBSCOPE_TEST_LEAK
# is set, under wrk beside the JSON route; heap live --inject into one worker names the app's line in the stack of
# the one site that keeps growing.
if command -v puma >/dev/null && command -v wrk >/dev/null; then
	port=$((21000 + $$ % 20000))
	(cd "$top/tests/integration/apps" && RBSCOPE_TEST_LEAK=1 RBSCOPE_TEST_PORT=$port exec puma -C puma.rb config.ru) \
		>"$work/puma-leak.out" 2>&1 &
	ppid=$!
	pids="$pids $ppid"
	for _ in $(seq 100); do [ "$(grep -c 'booted in' "$work/puma-leak.out")" -ge 2 ] && break; sleep 0.1; done
	w=$(pgrep -P $ppid | head -n 1)
	# (a connection a request, on both routes: a kept-alive connection stays with the worker that took it, served
	# inline for as long as it lasts (puma.rb). Four of /order all went to the other worker in one fresh clone's
	# run; in others four kept-alive /json took all four threads of this worker, which then accepted no /order.)
	wrk -t1 -c4 -d40s -H "Connection: close" "http://127.0.0.1:$port/order" >/dev/null 2>&1 &
	wk1=$!
	wrk -t1 -c4 -d40s -H "Connection: close" "http://127.0.0.1:$port/json" >/dev/null 2>&1 &
	wk2=$!
	sleep 3 # (warm)
	appline=$(grep -n 'text = JSON.generate(order)' "$top/tests/integration/apps/app.rb" | cut -d: -f1)
	# (one in 256: this worker gets about half the leaking requests, some 50 of them sampled in the 24 s; at 512 some
	# 20, which the growth rule's three thirds need to split as at least one each)
	"$RBSCOPE" heap live -p $w --inject --agent "$top/lib:$ext" --interval 256 -d 24 --every 2 --top 5 >"$work/puma-live.txt" 2>"$work/puma-live.err"
	rc=$?
	kill $wk1 $wk2 2>/dev/null
	wait $wk1 $wk2 2>/dev/null
	sed -n '/^-- sites that keep growing/,$p' "$work/puma-live.txt" >"$work/puma-grown.txt"
	check "heap live: puma worker under wrk, --inject: one site keeps growing, its stack through the app's leaking line app.rb:$appline (exit $rc; $(grep '^  [^ ]' "$work/puma-grown.txt" | cut -c1-120 | tr '\n' ' '))" \
		sh -c "test $rc = 0 && test \$(grep -c '^  [^ ].*: +[0-9]* objects kept' '$work/puma-grown.txt') = 1 && grep -q 'app.rb:$appline)' '$work/puma-grown.txt'"
	kill $ppid 2>/dev/null
	wait $ppid 2>/dev/null
else
	skipped "heap live: puma or wrk not installed"
fi

# serve: /debug/pprof/allocs and /debug/pprof/heap of a served process with the agent, read by go tool pprof; a
# process without the agent is a 503 that says why.
if command -v go >/dev/null; then
	RUBYLIB="$top/lib:$ext" ruby -rrbscope "$top/tests/integration/ruby/live.rb" >"$work/sl.out" 2>&1 &
	spid=$!
	ruby -e '$stdout.sync = true; puts "ready"; loop { sleep 0.01 }' >"$work/sn.out" 2>&1 &
	npid=$!
	pids="$pids $spid $npid"
	await_ready "$work/sl.out" $spid && await_ready "$work/sn.out" $npid
	sport=$((22000 + $$ % 20000))
	"$RBSCOPE" serve -p $spid -p $npid -l "127.0.0.1:$sport" -r 50 --census 10 2>"$work/sserve.err" &
	serve_pid=$!
	pids="$pids $serve_pid"
	serve_wait $sport
	export PPROF_TMPDIR=$work/pprof HOME=$work
	go tool pprof -raw "http://127.0.0.1:$sport/debug/pprof/allocs?seconds=2&pid=$spid" >"$work/s-allocs.raw" 2>"$work/s-allocs.err"
	check "serve: /debug/pprof/allocs of a process with the agent: alloc_objects and alloc_space, its sites (go tool pprof)" \
		sh -c "grep -q '^alloc_objects/count alloc_space/bytes' '$work/s-allocs.raw' && grep -q ' Object#churn ' '$work/s-allocs.raw'"
	go tool pprof -raw "http://127.0.0.1:$sport/debug/pprof/heap?seconds=3&pid=$spid" >"$work/s-heap.raw" 2>"$work/s-heap.err"
	check "serve: /debug/pprof/heap: inuse_objects and inuse_space, the leak's method alive in it (go tool pprof)" \
		sh -c "grep -q '^inuse_objects/count inuse_space/bytes' '$work/s-heap.raw' && grep -q ' Object#leak ' '$work/s-heap.raw'"
	code=$(curl -s -o "$work/s-none.txt" -w '%{http_code}' --max-time 10 "http://127.0.0.1:$sport/debug/pprof/allocs?seconds=1&pid=$npid")
	check "serve: /debug/pprof/allocs of a process without the agent: 503 and why ($code: $(head -c 120 "$work/s-none.txt"))" \
		sh -c "test '$code' = 503 && grep -q 'no rbscope agent\|--inject' '$work/s-none.txt'"
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$sport/debug/pprof/allocs?seconds=1")
	check "serve: /debug/pprof/allocs without pid: 400" test "$code" = 400
	curl -s "http://127.0.0.1:$sport/metrics" >"$work/s-metrics.txt"
	check "serve --census: /metrics has each process's heap objects and bytes by type, and the census's cost" \
		sh -c "grep -q '^rbscope_ruby_heap_objects{pid=\"$spid\".*type=\"STRING\"} [1-9]' '$work/s-metrics.txt' &&
			grep -q '^rbscope_ruby_heap_object_bytes{pid=\"$npid\".*type=\"ARRAY\"} [1-9]' '$work/s-metrics.txt' &&
			grep -q '^rbscope_ruby_heap_census_seconds{pid=\"$spid\"' '$work/s-metrics.txt' &&
			{ ! command -v promtool >/dev/null || promtool check metrics <'$work/s-metrics.txt' >/dev/null 2>&1; }"
	check "serve: the served process lives on, and serve too" sh -c "kill -0 $spid && kill -0 $serve_pid"
	kill $serve_pid 2>/dev/null
	wait $serve_pid 2>/dev/null
	stop_ruby $spid
	stop_ruby $npid
else
	skipped "serve allocs: no go (golang-go)"
fi
