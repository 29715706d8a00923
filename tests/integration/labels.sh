# labels.sh: the request behind each sample: a Puma cluster + Sinatra app under wrk with routes of different cost,
# each route's share of the profile's endpoint labels against the share of CPU time the app measures itself; the
# label as a frame with --label-frames, none without; serve's pprof carries them (sourced by run).

# --label on every Ruby: a request stuck in a read (stuck.rb), its query in a local, its tenant in an instance
# variable, its id in a fiber-local: every sample of its thread carries the three, exactly, and the main thread's
# none; pprof has them as labels. Bad --label: one line, exit 2.
for ver in $RUBIES; do
	start_ruby "$ver" "$top/tests/integration/ruby/stuck.rb" || { skipped "labels: --label, ruby $ver: cannot start it"; continue; }
	"$RBSCOPE" record -p "$pid" -d 1 --label q=query --label @tenant --label 'rid=Thread.current[:request_id]' \
		-f collapsed --label-frames -o "$work/ulabels.txt" 2>"$work/ulabels.err"
	rc=$?
	"$RBSCOPE" record -p "$pid" -d 1 --label q=query --label @tenant --label 'rid=Thread.current[:request_id]' \
		-o "$work/ulabels.pb.gz" 2>/dev/null
	stop_ruby "$pid"
	want='q=SELECT \* FROM orders WHERE id = 42;tenant=acme;rid=req-42;'
	stuck=$(awk '/Handler#handle/ { n += $NF } END { print n + 0 }' "$work/ulabels.txt")
	labelled=$(awk -v w="^$want" '/Handler#handle/ && $0 ~ w { n += $NF } END { print n + 0 }' "$work/ulabels.txt")
	check "labels: --label, ruby $ver: every sample of the stuck request carries its local, instance variable and fiber-local ($labelled of $stuck), the main thread's none" \
		sh -c "test $rc = 0 && test $stuck -ge 20 && test $labelled = $stuck && ! grep -v 'Handler#handle' '$work/ulabels.txt' | grep -q '^q=\|^tenant=\|^rid='"
	go tool pprof -tags "$work/ulabels.pb.gz" >"$work/ulabels-tags.txt" 2>/dev/null
	check "labels: --label, ruby $ver: pprof has them as labels q, tenant and rid" \
		sh -c "grep -A1 '^ *q:' '$work/ulabels-tags.txt' | grep -q 'SELECT \* FROM orders WHERE id = 42' &&
			grep -A1 '^ *tenant:' '$work/ulabels-tags.txt' | grep -q ': acme\$' && grep -A1 '^ *rid:' '$work/ulabels-tags.txt' | grep -q ': req-42\$'"
done
for bad in 'x=1abc' 'endpoint=@x' 'n=Thread.current[x]' 'a b=@x' '=@'; do
	"$RBSCOPE" record -p $$ -d 1 --label "$bad" -o "$work/bad.txt" 2>"$work/bad.err"
	rc=$?
	check "labels: --label '$bad' refused in one line, exit 2, nothing written ($(head -n 1 "$work/bad.err"))" \
		sh -c "test $rc = 2 && grep -q -- '--label' '$work/bad.err' && test \$(grep -c . '$work/bad.err') -le 2 && ! test -e '$work/bad.txt'"
done
"$RBSCOPE" record -p $$ -d 1 --label a=@a --label b=@b --label c=@c --label d=@d --label e=@e -o "$work/bad.txt" 2>"$work/bad.err"
rc=$?
check "labels: a fifth --label refused, exit 2 ($(head -n 1 "$work/bad.err"))" sh -c "test $rc = 2 && grep -q 'at most 4' '$work/bad.err'"

apps=$top/tests/integration/apps
missing=""
for cmd in puma wrk; do command -v $cmd >/dev/null || missing="$missing $cmd"; done
ruby -e 'require "sinatra/base"' 2>/dev/null || missing="$missing ruby-sinatra"
command -v go >/dev/null || missing="$missing go"
if [ -n "$missing" ]; then
	skipped "labels: not installed:$missing"
else
	port=$((20000 + ($$ + 7) % 20000))
	stats=$work/route-cpu
	# serve_routes RU PORT STATS NAME PATH...: Puma in cluster mode (routes-puma.rb) serving apps/RU on PORT, its
	# route accounts in STATS.*, booted; then wrk (2 connections, 15 s) asking for the PATHs in turn. $app_pid and
	# $wrk_pid; their output in $work/NAME.out and $work/NAME-wrk.out.
	serve_routes() {
		local ru=$1 p=$2 st=$3 name=$4
		shift 4
		(cd "$apps" && RBSCOPE_TEST_PORT=$p RBSCOPE_TEST_STATS=$st exec puma -C routes-puma.rb "$ru") >"$work/$name.out" 2>&1 &
		app_pid=$!
		pids="$pids $app_pid"
		for _ in $(seq 300); do [ "$(grep -c 'Worker .*booted' "$work/$name.out")" -ge 2 ] && break; sleep 0.1; done
		{ printf 'local paths = {'; printf ' "%s",' "$@"; printf ' }\n'
		  printf 'local i = 0\nrequest = function()\n  i = i %% #paths + 1\n  return wrk.format(nil, paths[i])\nend\n'; } >"$work/$name.lua"
		wrk -t2 -c2 -d15s -s "$work/$name.lua" "http://127.0.0.1:$p" >"$work/$name-wrk.out" 2>&1 &
		wrk_pid=$!
	}
	serve_routes routes.ru $port "$stats" routes /light /medium/1 /heavy /medium/2
	rmaster=$app_pid rwrk=$wrk_pid
	sleep 1
	# every worker's account of CPU time per route (whole requests, route_cpu.rb's middleware), summed
	route_cpu() { ruby -rjson -e 'h = Hash.new(0.0); Dir[ARGV[0] + ".[0-9]*"].each { |f| JSON.parse(File.read(f)).each { |k, v| h[k] += v } }; puts JSON.generate(h)' "${1:-$stats}"; }
	# 8 s at 500 Hz of two workers: some 8,000 labelled samples, a share's noise about 0.6 pp. (--mode cpu, not checked
	# here: 0.5 pp off the same CPU time in one run by hand; 1-2.8 pp before the env cache.)
	# record_routes PID STATS NAME: 8 s at 500 Hz of PID's workers ($work/NAME.pb.gz and .raw; $rc: its exit status),
	# and the shares of the seconds recorded in $work/NAME-shares.json: the app's CPU time per route ("cpu", in % of
	# its total; none if it measured none) and the profile's endpoint labels ("tags", in %, as go tool pprof says)
	record_routes() {
		local pid=$1 st=$2 name=$3
		shift 3
		route_cpu "$st" >"$work/$name-cpu0.json"
		"$RBSCOPE" record -p "$pid" -s -r 500 -d 8 -o "$work/$name.pb.gz" --raw "$work/$name.raw" "$@" 2>"$work/$name.err"
		rc=$?
		route_cpu "$st" >"$work/$name-cpu1.json"
		go tool pprof -tags "$work/$name.pb.gz" >"$work/$name-tags.txt" 2>/dev/null
		ruby -rjson -e '
			a = JSON.parse(File.read(ARGV[0])); b = JSON.parse(File.read(ARGV[1]))
			cpu = b.to_h { |k, v| [k, v - a.fetch(k, 0.0)] }
			total = cpu.values.sum
			tags = File.read(ARGV[2])[/endpoint:.*?(?:\n\n|\z)/m].to_s.scan(/\(\s*([\d.]+)%\): (.+)$/).to_h { |pct, k| [k.strip, pct.to_f] }
			puts JSON.generate("cpu" => total > 0 ? cpu.transform_values { |v| 100 * v / total } : {}, "tags" => tags)' \
			"$work/$name-cpu0.json" "$work/$name-cpu1.json" "$work/$name-tags.txt" >"$work/$name-shares.json" 2>/dev/null
	}
	# route_checks NAME WHAT: the checks of record_routes NAME's recording (WHAT: the Ruby and server it ran on)
	route_checks() {
		local name=$1 what=$2
		gap=$(ruby -rjson -e '
			s = JSON.parse(File.read(ARGV[0])); cpu = s["cpu"]; tags = s["tags"]
			exit 1 if tags.size != 3 || cpu.size != 3
			puts cpu.map { |k, v| (v - tags.fetch(k, -100)).abs }.max.round(2)' "$work/$name-shares.json" 2>/dev/null)
		check "labels: $what under wrk: each route's share of the endpoint labels within 2 pp of its share of the CPU time the app measures for its requests (largest gap ${gap:-none} pp; $(grep -A4 '^ *endpoint' "$work/$name-tags.txt" | tail -n 3 | tr -s ' ' | tr '\n' ';'))" \
			sh -c "test $rc = 0 && test -n '$gap' && ruby -e 'exit($gap <= 2 ? 0 : 1)'"
		"$RBSCOPE" report -i "$work/$name.raw" -f collapsed --label-frames -o "$work/$name-labelled.col" 2>/dev/null
		# --label n=Busy.run:n: Busy.run's parameter, the route's cost, taken by the BPF program as it samples: in
		# every sample the value of the request the endpoint label says (a local read later would often be the next
		# request's); and in no other method's frames (Puma has locals named n too)
		pairs=$(awk '{ e = ""; v = ""; k = split($0, f, ";")
			for (i = 1; i <= k; i++) { if (f[i] ~ /^GET \//) e = f[i]; if (f[i] ~ /^n=/) v = f[i] }
			if (e == "" || v == "") next
			sub(/ [0-9]+$/, "", v); w = $NF
			ok = (e == "GET /light" && v == "n=20000") || (e == "GET /heavy" && v == "n=80000") ||
				(e == "GET /medium/:id" && (v == "n=40000" || v == "n=40001"))
			if (ok) good += w; else bad += w }
			END { printf "%d %d", good, bad }' "$work/$name-labelled.col")
		outside=$(awk '/;n=/ && !/;Busy\.run \(/ { n += $NF } END { print n + 0 }' "$work/$name-labelled.col")
		check "labels: $what: --label n=Busy.run:n in the same recording: each sample's value the one of the request its endpoint says, 99% at least (consistent, not: $pairs), none outside Busy.run ($outside)" \
			sh -c "set -- $pairs; test \$1 -ge 500 && test \$(( \$2 * 100 )) -le \$(( \$1 + \$2 )) && test $outside = 0"
	}
	# (and --label n=Busy.run:n: Busy.run's parameter, the route's cost; the BPF capture takes it as it samples)
	record_routes $rmaster "$stats" labels --label n=Busy.run:n
	route_checks labels "puma cluster (wall)"
	"$RBSCOPE" report -i "$work/labels.raw" -f collapsed -o "$work/plain.col" 2>/dev/null
	cp "$work/labels-labelled.col" "$work/labelled.col"
	check "labels: --raw keeps them: report --label-frames has the route as a frame over the Ruby frames, without it none ($(grep -c ';GET /heavy;' "$work/labelled.col") stacks)" \
		sh -c "grep -q ';GET /heavy;' '$work/labelled.col' && grep -q ';GET /medium/:id;' '$work/labelled.col' && ! grep -q ';GET /heavy;' '$work/plain.col'"
	"$RBSCOPE" report -i "$work/labels.raw" -f speedscope -o "$work/labels.speedscope.json" 2>/dev/null
	"$RBSCOPE" report -i "$work/labels.raw" -f firefox -o "$work/labels.gecko.json" 2>/dev/null
	check "labels: speedscope has a profile per endpoint, Firefox each request as a Request marker on its thread's track" \
		ruby -rjson -e '
			s = JSON.parse(File.read(ARGV[0]))["profiles"].map { |p| p["name"] }
			g = JSON.parse(File.read(ARGV[1]))["threads"].flat_map { |t| t["markers"]["data"].map { |m| m[5] } }
			ends = g.select { |d| d.is_a?(Hash) && d["type"] == "Request" }.map { |d| d["endpoint"] }.uniq.sort
			want = ["GET /heavy", "GET /light", "GET /medium/:id"]
			exit(want.all? { |e| s.include?("endpoint #{e}") } && ends == want ? 0 : 1)' \
			"$work/labels.speedscope.json" "$work/labels.gecko.json"
	"$RBSCOPE" report -i "$work/labels.raw" -f summary -o "$work/plain.txt" 2>/dev/null
	check "labels: the summary's functions are the same with or without labels (no endpoint row)" \
		sh -c "! grep -q 'GET /heavy ()' '$work/plain.txt' && grep -q 'Busy.run' '$work/plain.txt'"
	# serve: the same labels in its pprof, for go tool pprof -tagfocus and Pyroscope
	sport=$((port + 1))
	rworkers=$(pgrep -P $rmaster | sed 's/^/-p /' | tr '\n' ' ')
	"$RBSCOPE" serve --listen 127.0.0.1:$sport -r 200 $rworkers >"$work/lserve.out" 2>&1 &
	lserve=$!
	pids="$pids $lserve"
	serve_wait $sport
	curl -s -o "$work/serve-labels.pb.gz" "http://127.0.0.1:$sport/debug/pprof/profile?seconds=3"
	go tool pprof -tagfocus='endpoint=GET /heavy' -top "$work/serve-labels.pb.gz" >"$work/focus.txt" 2>/dev/null
	check "labels: serve's /debug/pprof/profile carries them: go tool pprof -tagfocus endpoint='GET /heavy' keeps that route's samples only" \
		sh -c "grep -q 'Busy.run' '$work/focus.txt' && ! grep -q 'GET /light' '$work/focus.txt' &&
			go tool pprof -tags '$work/serve-labels.pb.gz' 2>/dev/null | grep -q 'GET /medium/:id'"
	kill $lserve 2>/dev/null
	wait $rwrk 2>/dev/null
	kill $rmaster 2>/dev/null
	wait $rmaster 2>/dev/null

	# A Rails app (Debian's rails, apps/rails.rb) on the same Puma: once routed (the action, its rendering, the
	# middleware after the router) a request is labelled with its action, Controller#action, from its env's path
	# parameters; before the router with its path. Each action's two labels together within 2 pp of its share of the
	# CPU time the app measures for its requests, and the action's own label most of them. (Before the BPF capture
	# took the env parameter as it sampled, read at the next tick instead, the frame of a short request had often
	# returned by then: 5% of the samples in requests had no label, the index action read 1.0-1.3 pp low, up to
	# 2.2 pp off.)
	if ! ruby -e 'require "action_controller/railtie"' 2>/dev/null; then
		skipped "labels: rails: not installed: ruby-railties"
	else
		rstats=$work/rails-cpu
		serve_routes rails.ru $((port + 2)) "$rstats" rails /orders /orders/1 /admin/reports/heavy /orders/2
		railsm=$app_pid railsw=$wrk_pid
		sleep 2 # (the first requests of each action warm it)
		record_routes $railsm "$rstats" rails
		res=$(ruby -rjson -e '
			s = JSON.parse(File.read(ARGV[0])); cpu = s["cpu"]; tags = s["tags"]
			path = { "OrdersController#index" => "GET /orders", "OrdersController#show" => "GET /orders/:id",
				 "Admin::ReportsController#heavy" => "GET /admin/reports/heavy" }
			stray = tags.keys - path.keys - path.values
			gaps = path.map { |act, pth| (cpu.fetch(act, 0.0) - tags.fetch(act, 0.0) - tags.fetch(pth, 0.0)).abs }
			own = path.map { |act, pth| tags.fetch(act, 0.0) / [tags.fetch(act, 0.0) + tags.fetch(pth, 0.0), 1e-9].max }
			ok = cpu.keys.sort == path.keys.sort && stray.empty? && gaps.max <= 2 && own.min >= 0.5
			each = path.keys.map { |act| "#{act} #{cpu.fetch(act, 0.0).round(1)}% / #{(tags.fetch(act, 0.0) + tags.fetch(path[act], 0.0)).round(1)}%" }.join(", ")
			puts "#{ok ? 0 : 1} largest gap #{gaps.max.round(2)} pp (CPU / labels: #{each}), the action its own label in #{(100 * own.min).round}%+ of its samples#{stray.empty? ? "" : ", other labels: #{stray.join(", ")}"}"' \
			"$work/rails-shares.json" 2>&1 | tail -n 1)
		check "labels: rails under wrk: each action's share of the endpoint labels (Controller#action once routed, its path before) within 2 pp of its share of the CPU time the app measures (${res#? })" \
			sh -c "test $rc = 0 && test '${res%% *}' = 0"
		# (a sample in a request: under RouteCpu#call; labelled: a label frame right under the process's root)
		"$RBSCOPE" report -i "$work/rails.raw" -f collapsed --label-frames -o "$work/rails.col" 2>/dev/null
		bare=$(awk '/;RouteCpu#call / { t += $NF; if ($0 !~ /\[apps\];([A-Z][A-Za-z:]*Controller#[a-z_]+|GET \/[^;(]*);/) u += $NF }
			END { if (t) printf "%.2f %d", 100 * u / t, t }' "$work/rails.col")
		check "labels: rails: samples in a request without a label: ${bare%% *}% of ${bare#* } (<= 1%; the BPF capture takes the env as it samples)" \
			awk -v b="${bare%% *}" 'BEGIN { exit !(b != "" && b + 0 <= 1) }'
		kill $railsw 2>/dev/null
		wait $railsw 2>/dev/null
		kill $railsm 2>/dev/null
		wait $railsm 2>/dev/null
	fi

	# The same routes on the other Rubies, in their chroots: under Puma where the Debian suite builds it for them
	# (2.7: bullseye's Puma 4.3 and Sinatra 2.0; 3.3: trixie's Puma 6.6 and Sinatra 4.1); 3.4 under WEBrick
	# (sid builds Puma's extension for its default Ruby, 3.3, only): one process, a thread a connection.
	for ver in 2.7 3.3 3.4; do
		server="exec puma -C routes-puma.rb routes.ru" pkgs="puma ruby-sinatra" conns=2
		if [ $ver = 3.4 ]; then
			# (one connection, kept alive: WEBrick serves it on one thread; two requests' threads in one process
			# would wait for the GVL in turn, their wall time no longer their CPU time, which the check compares)
			server="exec ruby routes-webrick.rb" pkgs="ruby-sinatra ruby-webrick ruby-rackup" conns=1
		fi
		root=$("$top/scripts/ruby-chroot" "$ver" $pkgs 2>"$work/chroot.err") ||
			{ skipped "labels: routes, ruby $ver: $(head -n 1 "$work/chroot.err")"; continue; }
		rm -rf "$root/tmp/rbscope-it/apps" "$root/tmp/rbscope-it/route-cpu".*
		mkdir -p "$root/tmp/rbscope-it"
		cp -r "$apps" "$root/tmp/rbscope-it/apps"
		vport=$((port + 3))
		chroot "$root" sh -c "cd /tmp/rbscope-it/apps && RBSCOPE_TEST_PORT=$vport RBSCOPE_TEST_STATS=/tmp/rbscope-it/route-cpu $server" \
			>"$work/routes-$ver.out" 2>&1 &
		vmaster=$!
		pids="$pids $vmaster"
		for _ in $(seq 300); do [ "$(grep -c 'Worker .*booted' "$work/routes-$ver.out")" -ge 2 ] && break; sleep 0.1; done
		wrk -t$conns -c$conns -d12s -s "$work/routes.lua" "http://127.0.0.1:$vport" >"$work/routes-$ver-wrk.out" 2>&1 &
		vwrk=$!
		sleep 1
		record_routes $vmaster "$root/tmp/rbscope-it/route-cpu" "routes-$ver" --label n=Busy.run:n
		what="puma $(sed -n 's/.*[Vv]ersion:* \([0-9.]*\).*/\1/p' "$work/routes-$ver.out" | head -n 1) cluster (wall)"
		[ $ver = 3.4 ] && what="$(sed -n 's/.*(\(WEBrick [0-9.]*\)).*/\1/p' "$work/routes-$ver.out" | head -n 1) (wall)"
		route_checks "routes-$ver" "ruby $ver: $what"
		kill $vwrk 2>/dev/null
		wait $vwrk 2>/dev/null
		kill -9 $(pgrep -P $vmaster) $vmaster 2>/dev/null # (its workers too)
		wait $vmaster 2>/dev/null
	done
fi
# A plain Rack app: the label from the env of its innermost call(env), its ids as :id; read on the GVL holder's CPU
# and from outside (--no-bpf) alike.
if command -v go >/dev/null && ruby -e 'require "rack"' 2>/dev/null && start_ruby 3.1 "$top/tests/integration/ruby/rack-env.rb"; then
	for how in "" --no-bpf; do
		"$RBSCOPE" record -p "$pid" -r 200 -d 3 $how -o "$work/rack.pb.gz" 2>"$work/rack.err"
		go tool pprof -tags "$work/rack.pb.gz" >"$work/rack-tags.txt" 2>/dev/null
		heavy=$(sed -n 's/.*(\s*\([0-9.]*\)%): GET \/heavy\/:id$/\1/p' "$work/rack-tags.txt")
		check "labels: plain Rack ${how:-(BPF)}: endpoints from the env, ids as :id, the heavy path about three quarters of them ($(grep -A3 '^ *endpoint' "$work/rack-tags.txt" | tail -n 2 | tr -s ' ' | tr '\n' ';'))" \
			sh -c "grep -q ': GET /users/:id/items$' '$work/rack-tags.txt' && test -n '$heavy' && ruby -e 'exit((60..90).cover?($heavy) ? 0 : 1)'"
	done
	stop_ruby "$pid"
fi
