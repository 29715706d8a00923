# agent.sh: the gem's in-process agent and the commands that use it (trace, backtraces, gcstat, eval, heapdump),
# against real Ruby 3.1 (host), 3.3 and 3.4 (chroots, where the gem is built and installed offline). Sourced by run.
at=$top/tests/integration/ruby/agent-target.rb
ac=$top/tests/integration/ruby/agent-client.rb
ext=${RBSCOPE_EXT:-$top/build/ext}
gem=$work/rbscope.gem
(cd "$top" && gem build rbscope.gemspec --output "$gem") >"$work/gem-build.log" 2>&1
check "gem: builds offline (gem build)" test -s "$gem"
gem install --local --no-document --install-dir "$work/gems" "$gem" >"$work/gem-install.log" 2>&1
# Loaded from there, whatever else is installed: an empty GEM_HOME of its own, no RUBYLIB.
check "gem: installs offline and loads from where it was installed (ruby 3.1)" sh -c \
	"env -u RUBYLIB GEM_HOME='$work/gems' GEM_PATH='$work/gems' ruby -rrbscope -e 'exit(Rbscope::Agent.socket_path.to_s.end_with?(\"/#{Process.pid}.sock\") &&
		\$LOADED_FEATURES.grep(%r{/rbscope\\.rb\\z}).then { |l| !l.empty? && l.all? { |f| f.start_with?(\"$work/gems/\") } })'"

# start_agent VER MODE [VAR=VALUE...]: the target with the agent loaded; sets apid (and child for forker mode).
start_agent() {
	local ver=$1 mode=$2 out
	shift 2
	out=$work/agent-$ver-$mode.out
	if [ "$ver" = 3.1 ]; then
		env "$@" RUBYLIB="$top/lib:$ext" ruby -rrbscope "$at" "$mode" >"$out" 2>&1 &
	else
		env "$@" chroot "$aroot" ruby -rrbscope /tmp/rbscope-it/agent-target.rb "$mode" >"$out" 2>&1 &
	fi
	apid=$!
	pids="$pids $apid"
	await_ready "$out" $apid && { child=$ready_child; return 0; }
	not_ok "agent: ruby $ver: $mode target did not start: $(head -c 300 "$out")"
	return 1
}

count() { grep -c -E "$1" "$2"; }

for ver in $(rubies_except 2.7); do
	if [ $ver != 3.1 ]; then
		aroot=$("$top/scripts/ruby-chroot" $ver 2>"$work/chroot.err") || { skipped "agent: ruby $ver: no chroot"; continue; }
		mkdir -p "$aroot/tmp/rbscope-it" && cp "$at" "$gem" "$aroot/tmp/rbscope-it/"
		chroot "$aroot" gem install --local --no-document /tmp/rbscope-it/rbscope.gem >"$work/gem-$ver.log" 2>&1
		rc=$?
		check "gem: builds and installs offline in ruby $ver$([ $rc = 0 ] || tail -c 300 "$work/gem-$ver.log")" test $rc = 0
		[ $rc = 0 ] || continue
	fi
	start_agent $ver busy RBSCOPE_ALLOW_EVAL=1 || continue
	p=$apid
	check "agent: ruby $ver: loading it starts no Ruby thread" grep -q '^threads 1$' "$work/agent-$ver-busy.out"
	"$RBSCOPE" backtraces -p $p >"$work/bt" 2>"$work/e"
	check "agent: ruby $ver: backtraces of every thread, with names and tids" \
		sh -c "grep -q '\"main\" tid $p ' '$work/bt' && grep -q '\"ticker\" tid [0-9]' '$work/bt' && grep -q 'agent-target.rb:[0-9]*:in' '$work/bt'"
	# First, before anything calls GC.stat in the process: the GC hook must not be what first does.
	"$RBSCOPE" trace -p $p --gc -d 2 >"$work/t5" 2>"$work/e"
	check "agent: ruby $ver: trace --gc: collections with pause (first thing attached), mark and sweep times" \
		grep -q -E '^GC #[0-9]+ (minor|major): paused [0-9.]+ ms in [0-9]+ steps?; marked in [0-9.]+ ms, swept by [0-9.]+ ms$' "$work/t5"
	check "agent: ruby $ver: the app lives on after a --gc trace" kill -0 $p
	"$RBSCOPE" gcstat -p $p >"$work/gc" 2>"$work/e"
	check "agent: ruby $ver: gcstat" grep -q '^  count  *[0-9]' "$work/gc"
	"$RBSCOPE" gcstat -p $p --json | ruby -rjson -e 'j = JSON.parse(STDIN.read); exit(j["gc"]["count"] > 0 && j["objects"]["TOTAL"] > 0)'
	check "agent: ruby $ver: gcstat --json" test $? = 0
	check "agent: ruby $ver: eval returns the inspect" test "$("$RBSCOPE" eval -p $p '6 * 7')" = 42
	"$RBSCOPE" eval -p $p 'raise "boom"' >/dev/null 2>"$work/e"; rc=$?
	check "agent: ruby $ver: eval that raises: exit 12 and the exception" sh -c "test $rc = 12 && grep -q 'RuntimeError: boom' '$work/e'"
	check "agent: ruby $ver: eval answers of any size (5 MB)" \
		test "$("$RBSCOPE" eval -p $p '"x" * 5_000_000' | wc -c)" = 5000003
	"$RBSCOPE" heapdump -p $p -o "$work/live.json" 2>"$work/e"; rc=$?
	check "agent: ruby $ver: heapdump writes a dump rbscope heap can read" \
		sh -c "test $rc = 0 && '$RBSCOPE' heap summary '$work/live.json' --by class --top 0 | grep ' Shop$' >/dev/null"
	check "agent: ruby $ver: the app lives on after a heap dump" kill -0 $p

	"$RBSCOPE" trace -p $p -m 'Shop#add' -d 1 >"$work/t1" 2>"$work/e"
	check "agent: ruby $ver: trace -m Shop#add (a Ruby method): calls with durations" test "$(count '^ *Shop#add <0\.[0-9]{6}>$' "$work/t1")" -ge 100
	check "agent: ruby $ver: trace shows each thread calling it" test "$(count '^-- thread [0-9]+$' "$work/t1")" -ge 2
	check "agent: ruby $ver: trace ends with a count of events and drops" grep -q 'events, 0 dropped' "$work/e"
	check "agent: ruby $ver: trace's first line says what is traced ($(head -n 1 "$work/e"))" \
		grep -q "^rbscope: process $p: tracing 1 method (Shop#add) (Ctrl-C to stop)" "$work/e"
	"$RBSCOPE" trace -p $p -m 'Hash#key?' -d 1 >"$work/t2" 2>"$work/e"
	check "agent: ruby $ver: trace -m Hash#key? (a C method)" test "$(count '^ *Hash#key\? <' "$work/t2")" -ge 100
	# Shop#total's @items.values.sum { |v| v.to_s.size }: C calls inside a C call, each with its own duration.
	"$RBSCOPE" trace -p $p -m Array#sum String#to_s -d 1 >"$work/t2n" 2>"$work/e"
	check "agent: ruby $ver: trace of a C method called inside another: nested under it" \
		awk '/^Array#sum <0\.[0-9]+>$/ { outer++ } /^  String#to_s <0\.[0-9]+>$/ { inner++ } /^String#to_s/ { flat++ }
			END { exit !(outer >= 100 && inner >= 10 * outer - 10 && flat <= 10) }' "$work/t2n"
	"$RBSCOPE" trace -p $p -m 'Shop#' -d 1 >"$work/t3" 2>"$work/e"
	check "agent: ruby $ver: trace -m Shop# (every instance method)" \
		sh -c "grep -q '^ *Shop#total <' '$work/t3' && grep -q '^ *Shop#add <' '$work/t3'"
	"$RBSCOPE" trace -p $p --slow 20 -m Shop#slow Shop#add -d 3 >"$work/t4" 2>"$work/e"
	check "agent: ruby $ver: trace --slow 20: only slow calls, with their callers ($(grep -c '^ *Shop#slow <' "$work/t4") slow calls; $(tail -n 1 "$work/e"))" \
		sh -c "grep -q '^ *Shop#slow <0\.0[2-9]' '$work/t4' && grep -q '^    from Object#work (.*agent-target.rb:[0-9]*)' '$work/t4' && ! grep -q 'Shop#add' '$work/t4'"
	# Callers named as profiles name them: the block prefix kept and qualified, a C method with its class at
	# its caller's line, not the slow call's own frame.
	check "agent: ruby $ver: trace --slow: callers labelled like profiles ($(grep -m 1 -A 3 '^ *Shop#slow <' "$work/t4" | tail -n 3 | tr -s ' ' | tr '\n' '|'))" \
		sh -c "grep -A 3 '^ *Shop#slow <' '$work/t4' | grep -q '^    from block \(([0-9] levels) \)\?in <main> (.*agent-target.rb:[0-9]*)' &&
			grep -q '^    from Kernel#loop (.*:[0-9]*)' '$work/t4' && ! grep -q '^    from Shop#slow' '$work/t4'"
	"$RBSCOPE" trace -p $p -c io -d 2 >"$work/t9" 2>"$work/e"
	check "agent: ruby $ver: trace -c io (a shipped tracer file): Kernel#sleep among them" \
		sh -c "grep -q '^ *Kernel#sleep <0\.0[2-9]' '$work/t9' && grep -q 'tracing [0-9]* methods' '$work/e'"
	printf '# my tracer\nShop#total   # the sum\nNoSuch::Thing#x\n' >"$work/my.tracer"
	"$RBSCOPE" trace -p $p -c "$work/my.tracer" -d 0.5 >"$work/t10" 2>"$work/e"
	check "agent: ruby $ver: trace -c FILE: comments read, a missing class skipped and said so" \
		sh -c "grep -q '^ *Shop#total <' '$work/t10' && grep -q 'skipped 1: no class or module named NoSuch::Thing' '$work/e'"
	"$RBSCOPE" trace -p $p -m NoSuch#x -d 0.5 >/dev/null 2>"$work/e"; rc=$?
	check "agent: ruby $ver: trace of a method that does not exist: exit 12, says which" \
		sh -c "test $rc = 12 && grep -q 'no class or module named NoSuch' '$work/e'"
	"$RBSCOPE" trace -p $p -f -d 0.5 >"$work/t6" 2>"$work/e"
	check "agent: ruby $ver: trace --firehose: every call, nested" \
		sh -c "grep -q '^ *Object#work$' '$work/t6' && grep -q '^ \+Shop#add <' '$work/t6' && grep -q '^ \+Hash#key? <' '$work/t6'"
	# A method also named with -m: once per call (its TracePoint and the firehose's hook both saw it before).
	"$RBSCOPE" trace -p $p -f -m Shop#add -d 0.5 >"$work/t6m" 2>"$work/e"
	"$RBSCOPE" trace -p $p -f -m 'Shop#add(arg0)' -d 0.5 >"$work/t6x" 2>"$work/e"
	check "agent: ruby $ver: trace --firehose -m Shop#add, with and without expressions: each call once" \
		sh -c "awk '/^ *Shop#add(\\(|\$)/ { if (prev) dup++; prev = 1; n++; next } { prev = 0 } END { exit !(n > 10 && !dup) }' '$work/t6m' &&
			awk '/^ *Shop#add(\\(|\$)/ { if (prev) dup++; prev = 1; n++; if (\$0 !~ /arg0=/) bare++; next } { prev = 0 }
				END { exit !(n > 10 && !dup && !bare) }' '$work/t6x'"

	# Expressions: on a Ruby method, values at each call; one that raises or exits is reported, the trace goes on.
	# (Ruby 3.4 inspects a Hash as {1 => "a"} and {a: 1}: @items may then reach the 200-character cut.)
	addl=$(line_of 'shop.add(i % 10' "$at")
	"$RBSCOPE" trace -p $p -m 'Shop#add(self, @items, __source__, arg0, price, name.to_s * 2, arg1.nosuch, exit, add(:x, 2), "x" * 1000)' \
		-d 1 >"$work/x1" 2>"$work/e"
	grep "agent-target.rb:$addl," "$work/x1" >"$work/x1m"
	# (every call traced in that second, at least 20: on a busy machine the app makes fewer than its usual 1000s)
	calls=$(count '^ *Shop#add\(' "$work/x1m")
	check "agent: ruby $ver: trace expressions of a Ruby method: self, @ivar, __source__, arg0, a parameter, Ruby code (all of $calls calls)" \
		test "$(count "^ *Shop#add\(self=#<Shop:0x[0-9a-f]+ @items=\{.*, @items=\{.*(\}|\.\.\.), __source__=[^ ]*agent-target.rb:$addl, arg0=[0-9], price=\"item [0-9]+\", name.to_s \* 2=\"([0-9])\2\", " "$work/x1m")" = "$calls" -a "$calls" -ge 20
	check "agent: ruby $ver: ... one that raises is reported, one that exits too, and the trace goes on (all of $calls calls)" \
		test "$(count "arg1.nosuch=<NoMethodError: undefined method .nosuch. for [^>]*String>, exit=<SystemExit: exit>, " "$work/x1m")" = "$calls" -a "$calls" -ge 20
	check "agent: ruby $ver: ... one that calls the traced method does not trace that call (all of $calls calls)" \
		sh -c "test \"\$(grep -c 'add(:x, 2)=2, ' '$work/x1m')\" = '$calls' && test '$calls' -ge 20 && ! grep -q 'arg0=:x' '$work/x1'"
	check "agent: ruby $ver: ... a long value is cut short" grep -q -E '"x" \* 1000="x{199}\.\.\.\) <0\.[0-9]{6}>$' "$work/x1m"
	check "agent: ruby $ver: ... and the app is unharmed" sh -c "kill -0 $p && test \"\$('$RBSCOPE' eval -p $p '[Shop.instance_method(:add).owner, Shop.new.add(1, 2)]')\" = '[Shop, 2]'"
	"$RBSCOPE" trace -p $p -m 'Hash#key?(self, arg0, __source__, size, @nope)' -d 0.5 >"$work/x2" 2>"$work/e"
	keyl=$(line_of 'h.key?(keys.sample)' "$at")
	check "agent: ruby $ver: trace expressions of a C method: self, __source__, Ruby code; argN said to be unavailable" \
		sh -c "grep -q -E '^ *Hash#key\?\(self=(\{:a=>1\}|\{a: 1\}), arg0=<C method: not available>, __source__=[^ ]*agent-target.rb:$keyl, size=1, @nope=nil\) <' '$work/x2' && grep -q 'Hash#key? is a C method: Ruby gives no access to a C method.s arguments, so arg0 shows <C method: not available>' '$work/e'"
	"$RBSCOPE" trace -p $p --slow 20 -m 'Shop#slow(self.class, __source__)' Shop#add -d 3 >"$work/x3" 2>"$work/e"
	check "agent: ruby $ver: trace --slow with expressions: values of the slow calls only" \
		sh -c "grep -q -E '^ *Shop#slow\(self.class=Shop, __source__=[^ ]*agent-target.rb:$(line_of 'shop.slow if' "$at")\) <0\.0[2-9]' '$work/x3' && ! grep -q 'Shop#add' '$work/x3'"
	"$RBSCOPE" trace -p $p -m 'Shop#add(1 +)' -d 0.5 >/dev/null 2>"$work/e"; rc=$?
	check "agent: ruby $ver: an expression that does not compile: exit 12, says which" \
		sh -c "test $rc = 12 && grep -q \"Shop#add: cannot compile '1 +'\" '$work/e'"

	# The CLI killed mid-trace: hooks come off at once, and a new trace works.
	"$RBSCOPE" trace -p $p -m Shop#add Hash#key? >"$work/t6" 2>&1 &
	tp=$!
	await_line "$work/t6" 'Shop#add <' $tp # tracing
	kill -9 $tp; wait $tp 2>/dev/null
	sleep 1
	check "agent: ruby $ver: CLI SIGKILLed mid-trace: its hooks are gone within 1 s" \
		test "$("$RBSCOPE" eval -p $p 'ObjectSpace.each_object(TracePoint).count(&:enabled?)')" = 0
	"$RBSCOPE" trace -p $p -m Shop#add -d 0.5 >"$work/t7" 2>/dev/null
	check "agent: ruby $ver: a new trace after that works" test "$(count 'Shop#add <' "$work/t7")" -ge 10
	# Four tracers at once, while the app's own URG and PROF handlers get signals.
	for i in 1 2 3 4; do
		"$RBSCOPE" trace -p $p -m Shop#add -d 1.5 >"$work/t4-$i" 2>&1 &
		eval "tr$i=\$!"
	done
	for i in 1 2 3 4; do await_line "$work/t4-$i" 'Shop#add <' "$(eval echo \$tr$i)" 15; done # all four tracing
	kill -URG $p; kill -PROF $p
	wait $tr1 $tr2 $tr3 $tr4
	ok4=0
	for i in 1 2 3 4; do [ "$(count 'Shop#add <' "$work/t4-$i")" -ge 10 ] && ok4=$((ok4 + 1)); done
	check "agent: ruby $ver: four tracers at once all get events" test $ok4 = 4
	check "agent: ruby $ver: the app's own SIGURG and SIGPROF handlers still run" \
		test "$("$RBSCOPE" eval -p $p '[$urg, $prof]')" = "[1, 1]"
	stop_ruby $p

	# Attaching while the main thread is blocked.
	for mode in sleep read queue; do
		start_agent $ver $mode || continue
		timeout 15 "$RBSCOPE" backtraces -p $apid >"$work/bt" 2>"$work/e"; rc=$?
		check "agent: ruby $ver: attach while the main thread is in $mode" sh -c "test $rc = 0 && grep -q '\"main\"' '$work/bt'"
		stop_ruby $apid
	done
	# A target that forks while traced: the child gets its own socket; the parent's trace gets none of its calls.
	if start_agent $ver forker; then
		"$RBSCOPE" trace -p $apid -m Shop#add -d 1 >"$work/t8" 2>/dev/null
		check "agent: ruby $ver: a forking target: its trace works" test "$(count 'Shop#add <' "$work/t8")" -ge 10
		check "agent: ruby $ver: ... and none of the child's calls are in it" sh -c "! grep -q '^-- thread $child\$' '$work/t8'"
		"$RBSCOPE" backtraces -p "$child" >"$work/bt" 2>"$work/e"
		check "agent: ruby $ver: the forked child answers on its own socket" grep -q 'agent-target.rb:[0-9]*:in' "$work/bt"
		check "agent: ruby $ver: ... its main thread with the child's own tid ($(grep -o '^Thread [0-9]* "main"[^:]*' "$work/bt"))" \
			grep -q "^Thread [0-9]* \"main\" tid $child " "$work/bt"
		stop_ruby "$child"
		stop_ruby $apid
	fi
	# A target that forks while traced: the parent's trace goes on, the child writes nothing into its ring and runs on.
	if start_agent $ver forklater RBSCOPE_ALLOW_EVAL=1; then
		"$RBSCOPE" trace -p $apid -m 'Shop#add(arg0)' -d 3 >"$work/x4" 2>"$work/e" &
		tr=$!
		await_line "$work/x4" 'Shop#add\(arg0=' $tr # tracing
		kill -USR1 $apid
		wait $tr
		child=$(sed -n 's/^child //p' "$work/agent-$ver-forklater.out")
		[ -n "$child" ] && pids="$pids $child"
		check "agent: ruby $ver: forked while traced: the parent's trace goes on after the fork" \
			test "$(count "^ *Shop#add\(arg0=:after_fork\) <" "$work/x4")" -ge 100
		check "agent: ruby $ver: ... nothing of the child's is in it" \
			sh -c "test -n '$child' && ! grep -q -e in_child -e '^-- thread $child\$' '$work/x4'"
		n1=$("$RBSCOPE" eval -p "$child" '$child_calls' 2>/dev/null)
		sleep 0.3
		n2=$("$RBSCOPE" eval -p "$child" '$child_calls' 2>/dev/null)
		check "agent: ruby $ver: ... the child runs on (its calls go on, it answers on its own socket)" \
			sh -c "kill -0 '$child' && test '${n1:-0}' -gt 0 && test '${n2:-0}' -gt '${n1:-0}'"
		"$RBSCOPE" trace -p "$child" -m 'Shop#add(arg0)' -d 0.5 >"$work/x5" 2>/dev/null
		check "agent: ruby $ver: ... and can be traced itself" test "$(count '^ *Shop#add\(arg0=:in_child\) <' "$work/x5")" -ge 10
		check "agent: ruby $ver: ... the parent lives on" kill -0 $apid
		stop_ruby "$child"
		stop_ruby $apid
	fi
	# The C-call hook reads Ruby's trace argument directly once it has checked the layout on the first events;
	# RBSCOPE_TRACE_API=1 keeps it on Ruby's accessors, the way taken on a Ruby whose layout differs.
	if start_agent $ver busy RBSCOPE_TRACE_API=1; then
		"$RBSCOPE" trace -p $apid -m 'Hash#key?' Kernel#sleep -d 1 >"$work/t11" 2>"$work/e"
		check "agent: ruby $ver: trace through Ruby's accessors (RBSCOPE_TRACE_API=1): C methods of a class and a module" \
			sh -c "test \$(grep -c '^ *Hash#key? <' '$work/t11') -ge 100 && grep -q '^ *Kernel#sleep <' '$work/t11'"
		stop_ruby $apid
	fi
done

# Security and faults (host Ruby).
start_agent 3.1 busy && {
	p=$apid
	"$RBSCOPE" eval -p $p '1' >/dev/null 2>"$work/e"; rc=$?
	check "agent: eval without the process's opt-in: refused, exit 4" sh -c "test $rc = 4 && grep -q 'eval refused' '$work/e'"
	"$RBSCOPE" trace -p $p -m 'Shop#add(arg0, @items.size)' -d 0.5 >/dev/null 2>"$work/e"; rc=$?
	check "agent: a trace expression of Ruby code without the process's opt-in to eval: refused, exit 12" \
		sh -c "test $rc = 12 && grep -q \"Shop#add: the expression '@items.size' is Ruby code, which needs the process's opt-in\" '$work/e'"
	"$RBSCOPE" trace -p $p -m 'Shop#add(self, @items, __source__, arg1, name)' -d 0.5 >"$work/x6" 2>"$work/e"
	check "agent: ... self, @ivar, __source__, argN and parameter names need no opt-in" \
		grep -q -E '^ *Shop#add\(self=#<Shop.*, @items=\{.*, __source__=.*, arg1=.*, name=.*\) <' "$work/x6"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$RBSCOPE" backtraces -p $p >/dev/null 2>"$work/e"; rc=$?
	check "agent: another uid cannot reach the socket: exit 4" test $rc = 4
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=+dac_override,+dac_read_search \
		--ambient-caps=+dac_override,+dac_read_search "$RBSCOPE" backtraces -p $p >/dev/null 2>"$work/e"; rc=$?
	check "agent: another uid that can reach the socket is refused by the agent (SO_PEERCRED): exit 4" \
		sh -c "test $rc = 4 && grep -q 'refused us: permission denied: uid 65534' '$work/e'"
	sock=/tmp/rbscope-0/$p.sock
	ruby "$ac" $sock oversized >"$work/c1" 2>&1
	check "agent: an oversized request gets an error and the connection goes on" \
		sh -c "grep -q '^ERROR request too large' '$work/c1' && grep -q '^OK rbscope-agent' '$work/c1'"
	ruby "$ac" $sock unknown >"$work/c2" 2>&1
	check "agent: an unknown request type gets an error and the connection goes on" \
		sh -c "grep -q '^ERROR unknown request type 999' '$work/c2' && grep -q '^OK rbscope-agent' '$work/c2'"
	ruby "$ac" $sock partial >"$work/c3" 2>&1 &
	cp=$!
	await_line "$work/c3" '^sent' $cp # stalled mid-frame
	"$RBSCOPE" backtraces -p $p >/dev/null 2>&1; rc=$?
	wait $cp
	check "agent: a client stalled mid-frame is dropped and others are still served" \
		sh -c "test $rc = 0 && grep -q dropped '$work/c3'"
	stop_ruby $p
}
# A planted symlink: as the socket directory, refused; as the socket itself, replaced, never followed.
mkdir -p "$work/xdg1" "$work/elsewhere" && ln -s "$work/elsewhere" "$work/xdg1/rbscope"
start_agent 3.1 sleep XDG_RUNTIME_DIR="$work/xdg1" && {
	check "agent: a symlinked socket directory is refused (and said so)" grep -q 'not listening' "$work/agent-3.1-sleep.out"
	check "agent: ... nothing is created where it points" test -z "$(ls -A "$work/elsewhere")"
	"$RBSCOPE" backtraces -p $apid >/dev/null 2>&1; rc=$?
	check "agent: ... and the CLI says there is no agent: exit 11" test $rc = 11
	stop_ruby $apid
}
mkdir -p -m 700 "$work/xdg2/rbscope" && echo precious >"$work/victim"
env XDG_RUNTIME_DIR="$work/xdg2" RUBYLIB="$top/lib:$ext" sh -c \
	'ln -s "$0" "$XDG_RUNTIME_DIR/rbscope/$$.sock"; exec ruby -rrbscope "$1" sleep' "$work/victim" "$at" >"$work/planted.out" 2>&1 &
apid=$!
pids="$pids $apid"
await_ready "$work/planted.out" $apid 50
check "agent: a symlink planted at the socket path is replaced, not followed" \
	sh -c "test -S '$work/xdg2/rbscope/$apid.sock' && test \"\$(cat '$work/victim')\" = precious && '$RBSCOPE' backtraces -p $apid >/dev/null"
stop_ruby $apid
ruby -e '$stdout.sync = true; puts "ready"; sleep' >"$work/plain.out" &
plain=$!
pids="$pids $plain"
await_ready "$work/plain.out" $plain
"$RBSCOPE" backtraces -p $plain 2>"$work/e"; rc=$?
check "agent: a Ruby without the gem: exit 11, with a hint that names --inject and RUBYOPT" \
	sh -c "test $rc = 11 && grep -q 'RUBYOPT=-rrbscope' '$work/e' && grep -q -- '--inject' '$work/e'"
stop_ruby $plain
"$RBSCOPE" trace -p 999999 -m Foo#bar 2>/dev/null; rc=$?
check "agent: trace of no such pid: exit 3" test $rc = 3

# A real app: Debian's puma (cluster mode) and sinatra with the agent preloaded and allocation tracing on.
# Three dumps of one worker under wrk load go through every heap command; the agent's own objects are no leak.
if command -v puma >/dev/null && command -v wrk >/dev/null && ruby -e 'require "sinatra/base"' 2>/dev/null; then
	hport=$((20000 + ($$ + 7919) % 20000))
	(cd "$top/tests/integration/apps" && RBSCOPE_TEST_PORT=$hport RBSCOPE_TEST_ALLOCATIONS=1 RUBYLIB="$top/lib:$ext" \
		RUBYOPT=-rrbscope exec puma -C puma.rb config.ru) >"$work/hpuma.out" 2>&1 &
	hmaster=$!
	pids="$pids $hmaster"
	for _ in $(seq 100); do [ "$(grep -c 'booted in' "$work/hpuma.out")" -ge 2 ] && break; sleep 0.1; done
	hworker=$(pgrep -P $hmaster | head -n 1)
	ok=1
	for d in 1 2 3; do
		wrk -t2 -c8 -d2s "http://127.0.0.1:$hport/json" >>"$work/hwrk.out" 2>&1
		"$RBSCOPE" heapdump -p "${hworker:-0}" -o "$work/puma$d.json" 2>>"$work/hdump.err" || ok=0
	done
	check "agent: puma worker: three heap dumps under load ($(du -k "$work/puma1.json" 2>/dev/null | cut -f1) kB; $(tail -n 1 "$work/hdump.err"))" \
		test $ok = 1
	undef=$(grep -c '"class":"0xffffffffffffffff"' "$work/puma1.json")
	for by in type class location file gem generation; do
		"$RBSCOPE" heap summary "$work/puma1.json" --by $by --top 5 >"$work/hs-$by" 2>"$work/hs-$by.err"
		rc=$?
		check "agent: puma worker dump: heap summary --by $by ($undef objects of class 0xff..ff)$([ $rc = 0 ] || cat "$work/hs-$by.err")" \
			sh -c "test $rc = 0 && test \$(wc -l <'$work/hs-$by') -ge 5"
	done
	check "agent: puma worker dump: the app's class and Puma's in the summary by class" \
		sh -c "'$RBSCOPE' heap summary '$work/puma1.json' --by class --top 0 | grep -q ' ShopApp\$' &&
			'$RBSCOPE' heap summary '$work/puma1.json' --by gem --top 0 | grep -q 'puma'"
	"$RBSCOPE" heap diff "$work/puma1.json" "$work/puma2.json" "$work/puma3.json" --top 0 >"$work/hdiff" 2>"$work/hdiff.err"
	rc=$?
	check "agent: puma worker dumps: heap diff leaves the agent's own objects out ($(grep -v '^note:' "$work/hdiff" | grep -c 'rbscope/agent.rb') rows of them; $(grep -o 'note: [0-9]* objects allocated by rbscope' "$work/hdiff"))" \
		sh -c "test $rc = 0 && head -n 1 '$work/hdiff' | grep -q 'still alive in' && ! grep -v '^note:' '$work/hdiff' | grep -q 'rbscope/agent.rb'"
	"$RBSCOPE" heap retained "$work/puma1.json" --by class --top 5 >"$work/hret" 2>&1
	rc=$?
	"$RBSCOPE" heap strings "$work/puma1.json" --top 5 >"$work/hstr" 2>&1
	rc2=$?
	check "agent: puma worker dump: heap retained --by class and heap strings" \
		sh -c "test $rc = 0 && test $rc2 = 0 && test \$(wc -l <'$work/hret') -ge 5 && test \$(wc -l <'$work/hstr') -ge 5"
	items=$(ruby -rjson -ne 'r = JSON.parse($_); if r["type"] == "CLASS" && r["name"] == "ShopApp"; puts r["address"]; break; end' "$work/puma1.json")
	"$RBSCOPE" heap path "$work/puma1.json" "${items:-0x0}" >"$work/hpath" 2>&1
	rc=$?
	check "agent: puma worker dump: heap path from a root to the ShopApp class ($items)" \
		sh -c "test $rc = 0 && grep -q ShopApp '$work/hpath'"
	# A Sinatra route is a method Sinatra removes from its class and calls through an UnboundMethod: the profile
	# names it ShopApp#GET /json, and trace -m takes that same name.
	wrk -t2 -c8 -d6s "http://127.0.0.1:$hport/json" >>"$work/hwrk.out" 2>&1 &
	wpid=$!
	sleep 0.3
	"$RBSCOPE" record -p "${hworker:-0}" -r 200 -d 1 -f collapsed -o "$work/route.col" 2>/dev/null
	"$RBSCOPE" trace -p "${hworker:-0}" -m 'ShopApp#GET /json' -d 2 >"$work/route.trace" 2>"$work/route.err"
	# Four server threads interleave their calls: each call still prints on one line with its value.
	"$RBSCOPE" trace -p "${hworker:-0}" -m 'ShopApp#GET /json(__source__)' -d 1 >"$work/route2.trace" 2>/dev/null
	wait $wpid
	check "agent: puma worker: trace -m 'ShopApp#GET /json', the name profiles give the route ($(grep -c '^ShopApp#GET /json <' "$work/route.trace") calls; $(grep -c 'ShopApp#GET /json' "$work/route.col") stacks; $(head -c 120 "$work/route.err"))" \
		sh -c "test \$(grep -c '^ShopApp#GET /json <0\.[0-9]*>$' '$work/route.trace') -ge 10 && grep -q ';ShopApp#GET /json (' '$work/route.col'"
	whole=$(grep -c '^ *ShopApp#GET /json(__source__=.*) <0\.[0-9]*>$' "$work/route2.trace")
	apart=$(grep -c '^ *ShopApp#GET /json\( <\|$\)' "$work/route2.trace")
	check "agent: puma worker, 4 threads: each traced call on one line with its value ($whole whole, $apart apart; $(grep -c '^-- thread' "$work/route2.trace") thread switches)" \
		sh -c "test $whole -ge 10 && test $apart = 0"
	check "agent: puma: master and workers live on after the dumps" sh -c "kill -0 $hmaster && kill -0 ${hworker:-0}"
	kill -TERM $hmaster 2>/dev/null
	wait $hmaster 2>/dev/null
else
	skipped "agent: puma worker heap dumps: puma, wrk or ruby-sinatra not installed"
fi

# Bundler: an app whose Gemfile does not list rbscope. RUBYOPT=-rrbscope stops it from booting (Bundler hides the
# gem); the documented preload (lib/rbscope/preload.rb, installed as share/rbscope/preload.rb) loads the agent,
# and with no agent installed the app still boots, with one warning.
if command -v bundle >/dev/null && ruby -e 'require "sinatra/base"' 2>/dev/null; then
	mkdir -p "$work/bapp"
	printf 'source "https://rubygems.org"\ngem "sinatra"\n' >"$work/bapp/Gemfile"
	printf 'require "sinatra/base"\nputs "agent #%s"\nputs "ready"\n$stdout.flush\nsleep\n' \
		'{defined?(Rbscope::Agent) ? "loaded" : "absent"}' >"$work/bapp/app.rb"
	(cd "$work/bapp" && bundle lock --local) >"$work/bundle-lock.log" 2>&1
	gpath="$work/gems:$(gem env gempath)"
	(cd "$work/bapp" && GEM_PATH="$gpath" RUBYOPT=-rrbscope timeout 20 bundle exec ruby app.rb) >"$work/b1.out" 2>&1 &
	b1=$!
	pids="$pids $b1"
	await_ready "$work/b1.out" $b1 100
	check "bundler: RUBYOPT=-rrbscope, Gemfile without the gem: the app does not boot (why the preload exists)" \
		grep -q 'cannot load such file -- rbscope' "$work/b1.out"
	stop_ruby $b1
	preload=$(ls "$work"/gems/gems/rbscope-*/lib/rbscope/preload.rb | head -n 1)
	(cd "$work/bapp" && GEM_PATH="$gpath" RUBYOPT="-r$preload" exec bundle exec ruby app.rb) >"$work/b2.out" 2>&1 &
	b2=$!
	pids="$pids $b2"
	await_ready "$work/b2.out" $b2 100
	bpid=$(pgrep -f "ruby app.rb" -P $b2 || echo $b2)
	"$RBSCOPE" backtraces -p "$bpid" >"$work/b2.bt" 2>&1
	check "bundler: the gem's preload under bundle exec: the app boots with the agent, which answers ($(head -c 80 "$work/b2.bt"))" \
		sh -c "grep -q '^agent loaded' '$work/b2.out' && grep -q 'app.rb:[0-9]*:in' '$work/b2.bt'"
	stop_ruby $b2
	mkdir -p "$work/share/rbscope" && cp "$top/lib/rbscope/preload.rb" "$work/share/rbscope/"
	(cd "$work/bapp" && GEM_PATH="$gpath" RUBYOPT="-r$work/share/rbscope/preload" exec bundle exec ruby app.rb) >"$work/b3.out" 2>&1 &
	b3=$!
	pids="$pids $b3"
	await_ready "$work/b3.out" $b3 100
	check "bundler: the installed preload (share/rbscope/preload.rb) finds the gem Bundler hides" grep -q '^agent loaded' "$work/b3.out"
	stop_ruby $b3
	(cd "$work/bapp" && exec env -u GEM_PATH -u GEM_HOME -u RUBYLIB RUBYOPT="-r$work/share/rbscope/preload" bundle exec ruby app.rb) >"$work/b4.out" 2>&1 &
	b4=$!
	pids="$pids $b4"
	await_ready "$work/b4.out" $b4 100
	check "bundler: no agent installed: the app boots anyway, with one warning ($(grep -c '^rbscope: the agent is not loaded' "$work/b4.out"))" \
		sh -c "grep -q '^agent absent' '$work/b4.out' && test \$(grep -c '^rbscope: the agent is not loaded' '$work/b4.out') = 1"
	stop_ruby $b4
	# The same app started with nothing preloaded: --inject finds the gem (the process's GEM_PATH) and traces it.
	printf 'require "sinatra/base"\nputs "ready"\n$stdout.flush\nloop { sleep 0.02 }\n' >"$work/bapp/app2.rb"
	(cd "$work/bapp" && GEM_PATH="$gpath" exec bundle exec ruby app2.rb) >"$work/b5.out" 2>&1 &
	b5=$!
	pids="$pids $b5"
	await_ready "$work/b5.out" $b5 100
	"$RBSCOPE" trace -p $b5 --inject -m Kernel#sleep -d 1 >"$work/b5.trace" 2>"$work/b5.err"
	rc=$?
	check "bundler: an app booted with nothing preloaded: trace --inject loads the gem Bundler hides and traces it ($(grep -c '^Kernel#sleep <' "$work/b5.trace") calls; $(head -n 1 "$work/b5.err"))" \
		sh -c "test $rc = 0 && test \$(grep -c '^Kernel#sleep <0\.0' '$work/b5.trace') -ge 10"
	stop_ruby $b5
else
	skipped "bundler: bundle (ruby-bundler) or ruby-sinatra not installed"
fi

# --inject: the agent into processes that never loaded it.
src inject.sh

# record --mode alloc: allocations sampled by the agent.
src allocs.sh
