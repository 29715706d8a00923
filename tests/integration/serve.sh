# serve.sh: `rbscope serve` with the real clients it is for: Go's own `go tool pprof` fetching profiles (one
# process, two servers merged), protoc decoding the bytes, a real Prometheus scraping /metrics and answering
# queries, promtool's lint, a stand-in Pyroscope for --push; processes that start and exit while served, one in
# a pid namespace, and bad requests. Sourced by run (SUITE=serve).
gvl=$top/tests/integration/ruby/gvl.rb
export PPROF_TMPDIR=$work/pprof HOME=$work # go tool pprof keeps what it fetched there
mkdir -p "$PPROF_TMPDIR"
base=$((20000 + $$ % 20000))
port1=$base port2=$((base + 1)) port_prom=$((base + 2)) port_ingest=$((base + 3)) port_tok=$((base + 4))

# targets_until PORT LINE... : poll /targets (10 s at most: serve looks for processes every 2 s) until it has a line
# starting with each LINE (a regular expression); it is left in $work/targets.txt. 0 once they all are.
targets_until() {
	local port=$1 l missing
	shift
	for _ in $(seq 100); do
		curl -s "http://127.0.0.1:$port/targets" >"$work/targets.txt"
		missing=
		for l in "$@"; do grep -q "^$l" "$work/targets.txt" || missing=1; done
		[ -z "$missing" ] && return 0
		sleep 0.1
	done
	return 1
}
# status URL [CURL ARGS]: the HTTP status curl gets.
status() { local u=$1; shift; curl -s -o /dev/null -w '%{http_code}' --max-time 20 "$@" "$u"; }

if ! command -v go >/dev/null || ! command -v promtool >/dev/null; then
	skipped "serve: no go or promtool here (scripts/deps installs golang-go and prometheus)"
	return 0 2>/dev/null || exit 0
fi

# Bad usage, each with its own exit code, before anything is sampled.
"$RBSCOPE" serve 2>"$work/serve.err"
rc=$?
check "serve: neither -p nor --all: exit 2 ($(head -n 1 "$work/serve.err"))" test $rc = 2
"$RBSCOPE" serve --all -l nonsense 2>"$work/serve.err"
rc=$?
check "serve: --listen without a port: exit 2 ($(head -n 1 "$work/serve.err"))" test $rc = 2
"$RBSCOPE" serve -p $$ 2>"$work/serve.err"
rc=$?
check "serve: -p of a shell: exit 5, not Ruby ($(head -n 1 "$work/serve.err"))" test $rc = 5
"$RBSCOPE" serve --all --push https://example.invalid 2>"$work/serve.err"
rc=$?
check "serve: --push https: exit 2 ($(head -n 1 "$work/serve.err"))" test $rc = 2

if ! start_ruby 3.1 "$gvl"; then
	not_ok "serve: cannot start ruby 3.1 ($(head -c 200 "$work/chroot.err"))"
	return 0 2>/dev/null || exit 0
fi
pid31=$pid
pid33=
if start_ruby 3.3 "$gvl"; then
	pid33=$pid
else
	skipped "serve: ruby 3.3: cannot start it here ($(head -c 200 "$work/chroot.err"))"
fi

"$RBSCOPE" serve -p "$pid31" ${pid33:+-p "$pid33"} -l "127.0.0.1:$port1" -r 200 2>"$work/serve1.err" &
serve1=$!
pids="$pids $serve1"
serve_wait "$port1"
check "serve: answers on 127.0.0.1:$port1 ($(head -n 1 "$work/serve1.err"))" kill -0 $serve1
"$RBSCOPE" serve -p "$pid31" -l "127.0.0.1:$port1" 2>"$work/serve.err"
rc=$?
check "serve: a port in use: exit 14 ($(head -n 1 "$work/serve.err"))" test $rc = 14

# go tool pprof, Go's own client, per process: the Ruby methods and every label.
for ver in 3.1 3.3; do
	p=$pid31
	[ $ver = 3.3 ] && p=$pid33
	[ -n "$p" ] || continue
	go tool pprof -raw -seconds 3 "http://127.0.0.1:$port1/debug/pprof/profile?pid=$p" >"$work/go-$ver.txt" 2>"$work/go.err"
	check "serve: ruby $ver: go tool pprof -raw -seconds 3 fetches the profile ($(grep -v '^Fetching\|^Please\|^Saved' "$work/go.err" | head -c 200))" \
		grep -q '^Samples:' "$work/go-$ver.txt"
	check "serve: ruby $ver: Go's CPU profile shape: samples/count cpu/nanoseconds, period type cpu nanoseconds, 3 s" \
		sh -c "grep -q '^samples/count cpu/nanoseconds' '$work/go-$ver.txt' && grep -q '^PeriodType: cpu nanoseconds' '$work/go-$ver.txt' && grep -q '^Duration: 3s' '$work/go-$ver.txt'"
	check "serve: ruby $ver: Object#burn, the hot method, is in it" grep -q 'Object#burn' "$work/go-$ver.txt"
	check "serve: ruby $ver: labels pid, process command, thread id, thread name, thread state" \
		sh -c "grep -q 'pid:\[$p\]' '$work/go-$ver.txt' && grep -q 'process command:\[.*gvl.rb\]' '$work/go-$ver.txt' && grep -q 'thread id:\[' '$work/go-$ver.txt' && grep -q 'thread name:\[cpu-a\]' '$work/go-$ver.txt' && grep -q 'thread state:\[running\]' '$work/go-$ver.txt'"
	check "serve: ruby $ver: the CPU profile holds only threads on a CPU (no sleeper, no GVL wait)" \
		sh -c "! grep -q 'thread name:\[sleeper\]\|thread state:\[GVL wait\]\|thread state:\[idle\]' '$work/go-$ver.txt'"
	others=$(grep -o 'pid:\[[0-9]*\]' "$work/go-$ver.txt" | sort -u | grep -vc "pid:\[$p\]")
	check "serve: ruby $ver: ?pid= keeps to that process ($others other pids)" test "$others" = 0
done

# The wall-clock profile has every thread, whatever it does: the sleeper idle, CPU threads waiting for the GVL.
go tool pprof -raw -seconds 2 "http://127.0.0.1:$port1/debug/pprof/wall?pid=$pid31" >"$work/go-wall.txt" 2>/dev/null
check "serve: /debug/pprof/wall: wall/nanoseconds, the sleeper idle and GVL waits" \
	sh -c "grep -q '^samples/count wall/nanoseconds' '$work/go-wall.txt' && grep -q 'thread name:\[sleeper\]' '$work/go-wall.txt' && grep -q 'thread state:\[GVL wait\]' '$work/go-wall.txt'"

# Two servers, one go tool pprof call: merged.
if [ -n "$pid33" ]; then
	"$RBSCOPE" serve -p "$pid33" -l "127.0.0.1:$port2" 2>"$work/serve2.err" &
	serve2=$!
	pids="$pids $serve2"
	serve_wait "$port2"
	go tool pprof -raw -seconds 2 "http://127.0.0.1:$port1/debug/pprof/profile?pid=$pid31" \
		"http://127.0.0.1:$port2/debug/pprof/profile" >"$work/go-merged.txt" 2>"$work/go.err"
	check "serve: two servers merged by one go tool pprof call: both processes in it" \
		sh -c "grep -q 'pid:\[$pid31\]' '$work/go-merged.txt' && grep -q 'pid:\[$pid33\]' '$work/go-merged.txt'"
	kill $serve2
	wait $serve2 2>/dev/null
	check "serve: SIGTERM ends serve with 0" test $? = 0
fi

# The bytes themselves against the published profile.proto.
curl -s -o "$work/serve.pb.gz" "http://127.0.0.1:$port1/debug/pprof/profile?seconds=1"
gzip -dc "$work/serve.pb.gz" | protoc --decode perftools.profiles.Profile -I "$top/tests/data" "$top/tests/data/profile.proto" \
	>"$work/serve-pb.txt" 2>"$work/protoc.err"
check "serve: protoc decodes the profile ($(head -c 200 "$work/protoc.err"))" grep -q '^sample {' "$work/serve-pb.txt"
check "serve: time_nanos, duration_nanos (1 s) and period are set" \
	sh -c "grep -q '^time_nanos: [1-9]' '$work/serve-pb.txt' && grep -q '^duration_nanos: 1000000000$' '$work/serve-pb.txt' && grep -q '^period: 5000000$' '$work/serve-pb.txt'"

# Bad requests get an error, and the server serves on.
u=http://127.0.0.1:$port1
check "serve: seconds=0 is 400" test "$(status "$u/debug/pprof/profile?seconds=0")" = 400
check "serve: seconds=301 is 400" test "$(status "$u/debug/pprof/profile?seconds=301")" = 400
check "serve: seconds=abc is 400" test "$(status "$u/debug/pprof/profile?seconds=abc")" = 400
check "serve: pid=x is 400" test "$(status "$u/debug/pprof/profile?pid=x")" = 400
for path in block goroutine mutex threadcreate; do
	check "serve: /debug/pprof/$path (Go only) is 404" test "$(status "$u/debug/pprof/$path")" = 404
done
for path in allocs heap; do # (through a process's agent: tests/integration/allocs.sh)
	check "serve: /debug/pprof/$path without pid=P is 400" test "$(status "$u/debug/pprof/$path?seconds=1")" = 400
done
check "serve: POST is 501" test "$(status "$u/metrics" -X POST -d x)" = 501
check "serve: a 9000-byte header is 431" test "$(status "$u/metrics" -H "X-Big: $(head -c 9000 /dev/zero | tr '\0' a)")" = 431
check "serve: a pid it does not sample is 503 with X-Go-Pprof: 1" \
	sh -c "curl -s -D - '$u/debug/pprof/profile?seconds=1&pid=1' | grep -qi '^X-Go-Pprof: 1'"
# raw_request PORT TEXT: send TEXT on a new connection and print the answer (bash's /dev/tcp: no nc needed).
raw_request() {
	exec 7<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf "$2" >&7
	timeout 20 cat <&7
	exec 7<&-
}
raw_request "$port1" 'GET / HTTP/1.1\r\nHost: x\r\n' >"$work/slow.txt" 2>/dev/null &
slow=$!
raw_request "$port1" 'GARBAGE\r\n\r\n' >"$work/garbage.txt" 2>/dev/null
check "serve: a malformed request line is 400" grep -q '^HTTP/1.1 400' "$work/garbage.txt"
check "serve: a slow client (head never finished) does not hold up others" \
	test "$(status "$u/metrics")" = 200
wait $slow
check "serve: the slow client gets 408 after 10 s" grep -q '^HTTP/1.1 408' "$work/slow.txt"
# A client that sends more after its request while its profile is sampled: drained, not spun on (CPU stays low).
exec 8<>"/dev/tcp/127.0.0.1/$port1"
printf 'GET /debug/pprof/profile?seconds=2 HTTP/1.1\r\nHost: x\r\n\r\nmore bytes than asked for' >&8
cpu0=$(cut -d' ' -f1 /proc/$serve1/schedstat)
sleep 2.5
cpu1=$(cut -d' ' -f1 /proc/$serve1/schedstat)
answer=$(timeout 5 head -c 12 <&8)
exec 8<&-
busy=$(( (cpu1 - cpu0) / 25000000 ))
check "serve: a waiting client that sends more is answered ($answer) without spinning (${busy}% CPU over 2.5 s)" \
	sh -c "[ '$answer' = 'HTTP/1.1 200' ] && [ $busy -lt 60 ]"
curls=""
for _ in $(seq 100); do
	curl -s -o /dev/null --max-time 3 "$u/debug/pprof/profile?seconds=1" &
	curls="$curls $!"
done
for c in $curls; do wait "$c"; done
check "serve: 100 connections at once (64 at most held), then it still answers" test "$(status "$u/metrics")" = 200

# Prometheus: promtool's lint, and a real server scraping it.
curl -s "$u/metrics" >"$work/metrics.txt"
promtool check metrics <"$work/metrics.txt" >"$work/promtool.txt" 2>&1
check "serve: promtool check metrics passes ($(head -c 200 "$work/promtool.txt"))" test $? = 0
check "serve: /metrics has threads by state, samples by state, GC time, own counters" \
	sh -c "grep -q '^rbscope_ruby_threads{pid=\"$pid31\",.*state=\"gvl_wait\"}' '$work/metrics.txt' && grep -q '^rbscope_ruby_thread_samples_total{' '$work/metrics.txt' && grep -q '^rbscope_ruby_gc_seconds_total{pid=\"$pid31\"' '$work/metrics.txt' && grep -q '^rbscope_ticks_dropped_total ' '$work/metrics.txt' && grep -q '^rbscope_sample_failures_total{reason=\"torn\"}' '$work/metrics.txt'"
cpu_a=$(awk -v p="$pid31" 'index($0, "rbscope_ruby_threads{pid=\"" p "\"") == 1 && /state="gvl_wait"/ {print $2}' "$work/metrics.txt")
mkdir -p "$work/prom"
cat >"$work/prom/prometheus.yml" <<CONF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: rbscope
    static_configs:
      - targets: ['127.0.0.1:$port1']
CONF
prometheus --config.file="$work/prom/prometheus.yml" --storage.tsdb.path="$work/prom/data" \
	--web.listen-address="127.0.0.1:$port_prom" >"$work/prom/log" 2>&1 &
prom=$!
pids="$pids $prom"
ready=
for _ in $(seq 300); do # up to 60 s: a loaded machine (make asan) starts it slowly
	curl -s "http://127.0.0.1:$port_prom/-/ready" | grep -qi ready && ready=1 && break
	sleep 0.2
done
if [ -n "$ready" ]; then
	for _ in $(seq 40); do # its first scrapes: a few seconds
		curl -s "http://127.0.0.1:$port_prom/api/v1/query" --data-urlencode 'query=rbscope_ticks_total[4s]' |
			grep -Eq '"values":\[\[[^]]*\],\[[^]]*\],\[' && break
		sleep 0.25
	done
	curl -s "http://127.0.0.1:$port_prom/api/v1/query" --data-urlencode "query=rbscope_ruby_threads{pid=\"$pid31\",state=\"gvl_wait\"}" >"$work/prom/q1.json"
	curl -s "http://127.0.0.1:$port_prom/api/v1/query" --data-urlencode "query=rate(rbscope_ruby_thread_samples_total{pid=\"$pid31\",state=\"gvl_wait\"}[3s])" >"$work/prom/q2.json"
	curl -s "http://127.0.0.1:$port_prom/api/v1/query" --data-urlencode "query=rbscope_ruby_gc_seconds_total" >"$work/prom/q3.json"
	curl -s "http://127.0.0.1:$port_prom/api/v1/query" --data-urlencode "query=rbscope_ruby_heap_live_slots{pid=\"$pid31\"} + rbscope_ruby_heap_free_slots{pid=\"$pid31\"}" >"$work/prom/q4.json"
	curl -s "http://127.0.0.1:$port_prom/api/v1/targets" | grep -o '"lastError":"[^"]*"' >"$work/prom/error"
	check "serve: Prometheus scraped the thread-state series ($(head -c 200 "$work/prom/q1.json") $(cat "$work/prom/error"))" \
		grep -q '"state":"gvl_wait"' "$work/prom/q1.json"
	check "serve: Prometheus: rate() of GVL-wait samples is positive (two threads share the GVL)" \
		grep -Eq '"value":\[[0-9.]+,"[1-9]' "$work/prom/q2.json"
	check "serve: Prometheus scraped the GC series" grep -q "\"pid\":\"$pid31\"" "$work/prom/q3.json"
	check "serve: Prometheus scraped the heap's live and free slots ($(head -c 200 "$work/prom/q4.json"))" \
		grep -Eq '"value":\[[0-9.]+,"[1-9][0-9]*"' "$work/prom/q4.json"
else
	not_ok "serve: Prometheus did not start ($(tail -n 2 "$work/prom/log"))"
fi
kill $prom 2>/dev/null
wait $prom 2>/dev/null

# --all: processes found as they start, dropped as they exit, one in a pid namespace; --push to a stand-in Pyroscope.
mkdir -p "$work/ingest"
ruby "$top/tests/integration/ruby/ingest.rb" "$port_ingest" "$work/ingest" >"$work/ingest.out" 2>&1 &
ingest=$!
pids="$pids $ingest"
await_ready "$work/ingest.out" $ingest
"$RBSCOPE" serve --all -l "127.0.0.1:$port2" --push "http://127.0.0.1:$port_ingest" --push-interval 2 \
	--service shop 2>"$work/serve-all.err" &
serve_all=$!
pids="$pids $serve_all"
serve_wait "$port2"
check "serve --all: finds the Rubies already running" targets_until "$port2" "$pid31	live"
ruby -e '$stdout.sync = true; puts "ready"; loop { 1000.times { |i| i * i } }' >"$work/late.out" 2>&1 &
late=$!
pids="$pids $late"
unshare --pid --fork --kill-child --mount-proc ruby -e '$stdout.sync = true; puts "ready"; def spin = loop { 1000.times { |i| i * i } }; spin' \
	>"$work/ns.out" 2>&1 &
ns_parent=$!
pids="$pids $ns_parent"
# A Ruby in a cgroup named as Docker names a container's: its id is the "container id" label. cgroup v2 at
# /sys/fs/cgroup, else a v1 hierarchy; skipped where none can be made.
cid=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
cg=""
for d in /sys/fs/cgroup /sys/fs/cgroup/pids /sys/fs/cgroup/unified; do
	[ -f "$d/cgroup.procs" ] && mkdir "$d/docker-$cid.scope" 2>/dev/null && cg=$d/docker-$cid.scope && break
done
if [ -n "$cg" ]; then
	sh -c 'echo $$ >"$1/cgroup.procs" && exec ruby -e "\$stdout.sync = true; puts %q(ready); def boxed = loop { 1000.times { |i| i * i } }; boxed"' \
		sh "$cg" >"$work/boxed.out" 2>&1 &
	boxed=$!
	pids="$pids $boxed"
	await_ready "$work/boxed.out" $boxed
fi
await_ready "$work/late.out" $late
await_ready "$work/ns.out" $ns_parent
ns_ruby=$(pgrep -P "$ns_parent" | head -n 1)
targets_until "$port2" "$late	live" "$ns_ruby	live" ${cg:+"$boxed	live"}
check "serve --all: a Ruby started later is picked up" grep -q "^$late	live" "$work/targets.txt"
check "serve --all: a Ruby in its own pid namespace is sampled (pid $ns_ruby)" grep -q "^$ns_ruby	live" "$work/targets.txt"
go tool pprof -raw -seconds 2 "http://127.0.0.1:$port2/debug/pprof/profile?pid=$ns_ruby" >"$work/go-ns.txt" 2>/dev/null
check "serve --all: the namespaced Ruby's profile has its method (Object#spin)" grep -q 'Object#spin' "$work/go-ns.txt"
if [ -n "$cg" ]; then
	check "serve --all: a Ruby in a container's cgroup: /targets shows its container id" \
		grep -q "^$boxed	live	[^	]*	$cid	" "$work/targets.txt"
	go tool pprof -raw -seconds 2 "http://127.0.0.1:$port2/debug/pprof/profile?pid=$boxed" >"$work/go-boxed.txt" 2>/dev/null
	check "serve --all: its profile carries the container id label" grep -q "container id:\[$cid\]" "$work/go-boxed.txt"
	stop_ruby $boxed
	rmdir "$cg" 2>/dev/null
else
	skipped "serve --all: no cgroup hierarchy to make a container's cgroup in"
fi
stop_ruby $late
check "serve --all: a Ruby that exits is dropped" targets_until "$port2" "$late	gone"
check "serve --all: its profile is then 503" \
	test "$(status "http://127.0.0.1:$port2/debug/pprof/profile?seconds=1&pid=$late")" = 503
kill "$ns_ruby" 2>/dev/null # unshare --fork itself ignores SIGTERM while its child runs
wait $ns_parent 2>/dev/null
q=$(cat "$work"/ingest/*.query 2>/dev/null | grep -m 1 "pid%3D$pid31")
check "serve --push: /ingest gets name=shop{host,pid}, from, until, format=pprof, spyName=rbscope (${q:0:160})" \
	sh -c "echo '$q' | grep -q '^POST /ingest?name=shop%7Bhost%3D.*pid%3D$pid31' && echo '$q' | grep -q 'from=[0-9]*&until=[0-9]*&format=pprof&spyName=rbscope'"
n=$(grep -l "pid%3D$pid31" "$work"/ingest/*.query | head -n 1)
go tool pprof -raw "${n%.query}.pb.gz" >"$work/go-push.txt" 2>&1
check "serve --push: the pushed body is a pprof go tool pprof reads, with Object#burn" grep -q 'Object#burn' "$work/go-push.txt"
kill $serve_all $ingest
wait $serve_all $ingest 2>/dev/null

# Only with the token, when one is set.
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/token"
"$RBSCOPE" serve -p "$pid31" -l "127.0.0.1:$port_tok" --token-file "$work/token" 2>/dev/null &
serve_tok=$!
pids="$pids $serve_tok"
serve_wait "$port_tok"
check "serve --token-file: no token is 401" test "$(status "http://127.0.0.1:$port_tok/metrics")" = 401
check "serve --token-file: a wrong token is 401" \
	test "$(status "http://127.0.0.1:$port_tok/metrics" -H 'Authorization: Bearer 0123456789abcdef0123')" = 401
check "serve --token-file: the token is 200" \
	test "$(status "http://127.0.0.1:$port_tok/metrics" -H "Authorization: Bearer $(cat "$work/token")")" = 200
kill $serve_tok
wait $serve_tok 2>/dev/null

# Another user's processes are not sampled, nor listed: serve --all as nobody sees nobody's Ruby only.
if id nobody >/dev/null 2>&1; then
	as_nobody="setpriv --reuid=nobody --regid=nogroup --clear-groups"
	$as_nobody ruby -e '$stdout.sync = true; puts "ready"; sleep' >"$work/nobody.out" 2>&1 &
	nob=$!
	pids="$pids $nob"
	await_ready "$work/nobody.out" $nob
	$as_nobody "$RBSCOPE" serve --all -l "127.0.0.1:$port_tok" 2>"$work/serve-nobody.err" &
	serve_nob=$!
	pids="$pids $serve_nob"
	serve_wait "$port_tok"
	curl -s "http://127.0.0.1:$port_tok/targets" >"$work/targets-nobody.txt"
	check "serve --all as nobody: its own Ruby listed ($(head -c 100 "$work/targets-nobody.txt" | tr '\t\n' '  '))" \
		grep -q "^$nob	" "$work/targets-nobody.txt"
	check "serve --all as nobody: root's Rubies not even listed" sh -c "! grep -q '^$pid31	' '$work/targets-nobody.txt'"
	kill $serve_nob $nob
	wait $serve_nob $nob 2>/dev/null
fi

check "serve: the Rubies served were never harmed (still running)" kill -0 "$pid31"
kill $serve1
wait $serve1 2>/dev/null
stop_ruby "$pid31"
[ -n "$pid33" ] && stop_ruby "$pid33"

# The GC's own counters read from each VM: what the process itself says GC.count, major_gc_count,
# GC.stat(:time) and its heap's live and free slots are, on every Ruby whose table knows rb_objspace's counters.
gcpids="" port_gc=$((base + 5))
for ver in $RUBIES; do
	if start_ruby "$ver" "$top/tests/integration/ruby/gccount.rb"; then
		gcpids="$gcpids $ver:$pid"
	else
		skipped "serve: GC counters: ruby $ver: cannot start it here"
	fi
done
if [ -n "$gcpids" ]; then
	"$RBSCOPE" serve $(for vp in $gcpids; do printf -- '-p %s ' "${vp#*:}"; done) -l "127.0.0.1:$port_gc" 2>"$work/serve-gc.err" &
	serve_gc=$!
	pids="$pids $serve_gc"
	serve_wait "$port_gc"
	curl -s "http://127.0.0.1:$port_gc/metrics" >"$work/metrics-gc.txt"
	for vp in $gcpids; do
		ver=${vp%%:*} p=${vp#*:}
		set -- $(sed -n 's/^ready //p' "$work/ruby-$ver.out")
		metric() { awk -v m="$1" -v p="$p" 'index($0, m "{pid=\"" p "\"") == 1 { print $NF }' "$work/metrics-gc.txt"; }
		count=$(metric rbscope_ruby_gc_count_total) major=$(metric rbscope_ruby_gc_major_count_total)
		check "serve: ruby $ver: GC.count and major collections read from its VM ($count, $major) are its own ($1, $2)" \
			test "$count $major" = "$1 $2"
		if [ "$3" = - ]; then
			check "serve: ruby $ver: no measured GC time where the VM measures none" \
				test -z "$(metric rbscope_ruby_gc_measured_seconds_total)"
		else
			ms=$(metric rbscope_ruby_gc_measured_seconds_total | awk '{ split($1, s, "."); printf "%d", int((s[1] * 1e9 + s[2]) / 1e6) }')
			check "serve: ruby $ver: GC time read from its VM (${ms:-none} ms) is its GC.stat(:time) ($3 ms)" \
				test "${ms:-x}" = "$3"
		fi
		# The heap's slots as its own GC.stat saw them last, asked for after the scrape. Going to sleep after
		# that GC.stat, the process still allocates a few objects (2-4 here: GC.stat's own, sleep's): live
		# may be that many more, taken from the free slots, their sum the same.
		live=$(metric rbscope_ruby_heap_live_slots) free=$(metric rbscope_ruby_heap_free_slots)
		kill -USR1 "$p"
		for _ in $(seq 40); do grep -q '^slots ' "$work/ruby-$ver.out" && break; sleep 0.05; done
		set -- $(sed -n 's/^slots //p' "$work/ruby-$ver.out")
		check "serve: ruby $ver: heap slots live and free read from its VM (${live:-none}, ${free:-none}) are its GC.stat's (${1:-none}, ${2:-none}) but for at most 8 allocated since" \
			sh -c "test $((${live:-0} + ${free:-0})) = $((${1:-1} + ${2:-1})) && test ${live:-0} -ge ${1:-1} && test ${live:-0} -le $((${1:-1} + 8))"
	done
	kill $serve_gc
	wait $serve_gc 2>/dev/null
	for vp in $gcpids; do stop_ruby "${vp#*:}"; done
fi
