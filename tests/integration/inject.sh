# inject.sh: --inject, the agent loaded into Ruby processes that never required it (sourced by agent.sh, after the
# gem is built and installed in the chroots). Each target parks threads in every wait Ruby has, counts a trapped
# SIGUSR1 and checksums a CPU loop (ruby/inject-target.rb): after the injection each wait returns what it was fed,
# on time, with no Errno::EINTR, the checksum holds and every signal is counted once.
it=$top/tests/integration/ruby/inject-target.rb
agent_dirs="$top/lib:$ext"

# start_target NAME MODE [CHROOT]: inject-target.rb, fed from a fifo on fd 10+; sets tpid and tfifo. Outside a
# chroot, under $target_ruby if set. With hide_gems=1, in a mount namespace of its own where its Ruby's gem
# directory (/var/lib/gems) is an empty tmpfs: a process with no gem installed, as rbscope sees it too.
start_target() {
	local name=$1 mode=$2 root=${3:-}
	local hide="{ [ ! -d ${root%/}/var/lib/gems ] || mount -t tmpfs none ${root%/}/var/lib/gems; } && exec \"\$0\" \"\$@\""
	tfifo=$work/$name.in
	rm -f "$tfifo" && mkfifo "$tfifo"
	if [ "${hide_gems:-}" = 1 ] && { [ -z "$root" ] || [ "$root" = / ]; }; then
		unshare -m --propagation private sh -c "$hide" "${target_ruby:-ruby}" "$it" "$mode" <"$tfifo" >"$work/$name.out" 2>&1 &
	elif [ "${hide_gems:-}" = 1 ]; then
		cp "$it" "$root/tmp/rbscope-it/"
		unshare -m --propagation private sh -c "$hide" chroot "$root" ruby /tmp/rbscope-it/inject-target.rb "$mode" \
			<"$tfifo" >"$work/$name.out" 2>&1 &
	elif [ -z "$root" ] || [ "$root" = / ]; then
		"${target_ruby:-ruby}" "$it" "$mode" <"$tfifo" >"$work/$name.out" 2>&1 &
	else
		cp "$it" "$root/tmp/rbscope-it/"
		chroot "$root" ruby /tmp/rbscope-it/inject-target.rb "$mode" <"$tfifo" >"$work/$name.out" 2>&1 &
	fi
	tpid=$!
	pids="$pids $tpid"
	# keep the fifo open for writing until fed (a reader would see EOF otherwise)
	eval "exec {fd_$name}>'$tfifo'"
	await_ready "$work/$name.out" $tpid && footprint $tpid >"$work/$name.fp0"
}
# footprint PID: the process's threads ("T tid") and what its fds are ("F socket:[1234]"), sorted.
footprint() {
	{ ls /proc/$1/task | sed 's/^/T /'; for f in /proc/$1/fd/*; do echo "F $(readlink "$f")"; done; } 2>/dev/null | sort
}
# footprint_ok NAME WHAT: what the process has more than when it was ready is the agent's own footprint and nothing
# else: one thread (the control socket's listener) and four fds (that socket, three eventfds). The serving
# Ruby thread ends with its client, and Ruby keeps an ended thread's OS thread a while for reuse: waited for.
footprint_ok() {
	local added
	for _ in $(seq 100); do
		added=$(footprint $tpid | comm -13 "$work/$1.fp0" - | sed 's/^T [0-9]*$/T/; s/socket:\[[0-9]*\]/socket/')
		[ "$(echo "$added" | grep -c '^T$')" = 1 ] && break
		sleep 0.1
	done
	check "inject: $2: the process holds no more than the agent's footprint, one thread and a socket and three eventfds ($(echo $added | tr '\n' ' '))" \
		test "$(echo "$added" | sort | tr '\n' ' ')" = "F anon_inode:[eventfd] F anon_inode:[eventfd] F anon_inode:[eventfd] F socket T "
}
# offer_agent ROOT NAME SO PATTERN WHAT: the extension SO (with lib/) put in ROOT's /tmp/rbscope-it/NAME and offered
# to a sleeping Ruby of that root: refused, exit 13, with a message matching PATTERN (PID: the process's), nothing
# mapped.
offer_agent() {
	local root=$1 dir=/tmp/rbscope-it/$2 so=$3 pattern=$4 what=$5 pid maps0 rc
	mkdir -p "$root$dir/rbscope" && cp -r "$top/lib/." "$root$dir/" && cp "$so" "$root$dir/rbscope/"
	chroot "$root" ruby -e 'puts "ready"; $stdout.flush; sleep' >"$work/offer.out" 2>&1 &
	pid=$!
	pids="$pids $pid"
	await_ready "$work/offer.out" $pid
	maps0=$(wc -l </proc/$pid/maps)
	"$RBSCOPE" backtraces -p $pid --inject --agent $dir 2>"$work/e"
	rc=$?
	check "inject: $what: refused, exit 13, nothing mapped ($(head -c 150 "$work/e"))" \
		sh -c "test $rc = 13 && grep -q '${pattern//PID/$pid}' '$work/e' && test \$(wc -l </proc/$pid/maps) = $maps0"
	stop_ruby $pid
}
# inject_sleeper ROOT WHAT [ARGS...]: --inject (with ARGS) into inject-sleeper.rb under ROOT's Ruby ("" for the
# host's): the agent loads and answers, every sleep lasts its time.
inject_sleeper() {
	local root=$1 what=$2 sp rc
	shift 2
	if [ -z "$root" ] || [ "$root" = / ]; then
		ruby "$top/tests/integration/ruby/inject-sleeper.rb" >"$work/sleeper.out" 2>&1 &
	else
		cp "$top/tests/integration/ruby/inject-sleeper.rb" "$root/tmp/rbscope-it/"
		chroot "$root" ruby /tmp/rbscope-it/inject-sleeper.rb >"$work/sleeper.out" 2>&1 &
	fi
	sp=$!
	pids="$pids $sp"
	if ! await_ready "$work/sleeper.out" $sp; then
		not_ok "inject: $what, threads that only sleep: the daemon did not start"
		return
	fi
	"$RBSCOPE" backtraces -p $sp --inject "$@" >"$work/sleeper.bt" 2>"$work/sleeper.err"
	rc=$?
	sleep 1.2
	kill -USR1 $sp
	for _ in $(seq 30); do grep -q '^sleeps' "$work/sleeper.out" && break; sleep 0.1; done
	check "inject: $what, threads that only sleep with a timeout: one is borrowed, the agent answers, no sleep cut short (exit $rc; $(grep '^sleeps' "$work/sleeper.out"); $(tail -n 1 "$work/sleeper.err"))" \
		sh -c "test $rc = 0 && grep -q '\"main\"' '$work/sleeper.bt' && grep -q '^sleeps [0-9]*, early 0\$' '$work/sleeper.out'"
	stop_ruby $sp
}
# feed NAME: wake every parked thread; wait for the report.
feed() {
	local fd
	eval "fd=\$fd_$1"
	echo feed >&"$fd"
	eval "exec $fd>&-"
	for _ in $(seq 100); do grep -q '^errors' "$work/$1.out" && break; sleep 0.1; done
}
# target_ok NAME WHAT: the report says every wait got what it was fed, on time, and nothing raised EINTR.
target_ok() {
	local out=$work/$1.out
	check "inject: $2: every parked thread woke with what it was fed, on time, no EINTR ($(grep -E '^(results|checksum|errors)' "$out" | tr '\n' ' '))" \
		sh -c "grep -q -E '^results cv 3\\.[0-4], lock ok, pop item, read hello, select ok, sleep 4\\.[0-5]\$' '$out' &&
			grep -q -E '^checksum (ok|none) ' '$out' && grep -q '^errors none\$' '$out'"
}
# unnamed_threads PID: Ruby threads with no name in a snapshot (every thread of inject-target.rb has one; the
# agent's loader and serving threads have none)
unnamed_threads() { "$RBSCOPE" snapshot -p "$1" 2>/dev/null | grep -c '^Thread [0-9]* tid='; }

# A busy process (a CPU loop in main), SIGUSR1 sent all through the injection.
if start_target busy busy; then
	before=$(unnamed_threads $tpid)
	( for i in $(seq 40); do
		kill -USR1 $tpid
		[ $((i % 2)) = 0 ] && kill -URG $tpid
		[ $((i % 4)) = 0 ] && kill -PROF $tpid
		sleep 0.025
	done ) &
	storm=$!
	t0=$(date +%s%N)
	"$RBSCOPE" backtraces -p $tpid --inject --agent "$agent_dirs" >"$work/inj.bt" 2>"$work/inj.err"
	rc=$?
	t1=$(date +%s%N)
	wait $storm
	check "inject: busy ruby 3.1: backtraces --inject loads the agent and answers ($(( (t1 - t0) / 1000000 )) ms; $(tail -n 1 "$work/inj.err"))" \
		sh -c "test $rc = 0 && grep -q '\"locker\"' '$work/inj.bt' && grep -q 'inject-target.rb:[0-9]*:in' '$work/inj.bt'"
	"$RBSCOPE" gcstat -p $tpid --inject --agent "$agent_dirs" >"$work/inj.gc" 2>"$work/inj.err2"
	rc=$?
	check "inject: a second --inject finds the agent there and loads nothing" \
		sh -c "test $rc = 0 && grep -q '^  count' '$work/inj.gc' && ! grep -q 'agent loaded' '$work/inj.err2'"
	# (the agent's own serving thread lives while a client is connected: give both a moment to end)
	for _ in $(seq 30); do after=$(unnamed_threads $tpid); [ "$after" = 0 ] && break; sleep 0.1; done
	check "inject: the loader's Ruby thread is gone once the agent is in (unnamed Ruby threads: $before before, $after after)" \
		sh -c "test '$before' = 0 && test '$after' = 0"
	check "inject: the process's stderr says once who loaded the agent and when" \
		test "$(grep -c '^rbscope: agent loaded into process [0-9]* by rbscope --inject (uid [0-9]*, pid [0-9]*) at ' "$work/busy.out")" = 1
	footprint_ok busy "busy ruby 3.1"
	feed busy
	target_ok busy "busy ruby 3.1"
	check "inject: busy ruby 3.1: the CPU loop's checksum holds; 40 SIGUSR1, 20 SIGURG, 10 SIGPROF sent during the injection counted once each ($(grep -E '^(checksum|usr1|urg|prof)' "$work/busy.out" | tr '\n' ' '))" \
		sh -c "grep -q '^checksum ok' '$work/busy.out' && grep -q '^usr1 40\$' '$work/busy.out' &&
			grep -q '^urg 20\$' '$work/busy.out' && grep -q '^prof 10\$' '$work/busy.out'"
fi

# An allocation-heavy process (the GC runs all through the injection).
if start_target alloc alloc; then
	"$RBSCOPE" gcstat -p $tpid --inject --agent "$agent_dirs" >"$work/inj.gc" 2>"$work/inj.err"
	rc=$?
	check "inject: allocating ruby 3.1 (GC all the time): --inject loads the agent ($(tail -n 1 "$work/inj.err"))" \
		sh -c "test $rc = 0 && grep -q '^  count' '$work/inj.gc'"
	feed alloc
	target_ok alloc "allocating ruby 3.1"
fi

# A single-threaded CPU loop has no parked thread to borrow: refused in one line, untouched.
ruby -e 'puts "ready"; $stdout.flush; i = 0; loop { i += 1 }' >"$work/spin.out" 2>&1 &
spin=$!
pids="$pids $spin"
if await_ready "$work/spin.out" $spin; then
	"$RBSCOPE" backtraces -p $spin --inject --agent "$agent_dirs" 2>"$work/e"
	rc=$?
	check "inject: a single-threaded CPU loop (nothing parked to borrow): exit 13, one line, the process runs on ($(head -c 120 "$work/e"))" \
		sh -c "test $rc = 13 && grep -q 'no Ruby thread' '$work/e' && kill -0 $spin"
fi
stop_ruby $spin

# No --agent, and no rbscope gem where that Ruby looks (its GEM_HOME, GEM_PATH, RubyGems' defaults, the user's
# gem directories): refused in one line naming the Ruby, nothing written. (Skipped where a gem is installed.)
api=$(ruby -e 'print RbConfig::CONFIG["ruby_version"]')
if ls -d /var/lib/gems/$api/gems/rbscope-* /usr/local/lib/ruby/gems/$api/gems/rbscope-* \
	/usr/lib/ruby/gems/$api/gems/rbscope-* >/dev/null 2>&1; then
	skipped "inject: no gem for the process's Ruby: a gem is installed on this machine"
else
	mkdir -p "$work/nohome"
	env -u GEM_HOME -u GEM_PATH HOME="$work/nohome" ruby -e 'puts "ready"; $stdout.flush; sleep' >"$work/nogem.out" 2>&1 &
	ng=$!
	pids="$pids $ng"
	if await_ready "$work/nogem.out" $ng; then
		maps0=$(wc -l </proc/$ng/maps)
		"$RBSCOPE" backtraces -p $ng --inject 2>"$work/e"
		rc=$?
		check "inject: no gem for the process's Ruby, no --agent: exit 13, one line naming the Ruby, nothing mapped ($(head -c 150 "$work/e"))" \
			sh -c "test $rc = 13 && grep -q 'no rbscope gem installed for Ruby ${api%.*}' '$work/e' && test \$(wc -l <'$work/e') = 1 &&
				test \$(wc -l </proc/$ng/maps) = $maps0"
	fi
	stop_ruby $ng
fi

inject_sleeper "" "ruby 3.1" --agent "$agent_dirs"

# An idle process (every thread parked): the job still runs at once; then 100 more --inject calls change nothing.
if start_target idle idle; then
	"$RBSCOPE" backtraces -p $tpid --inject --agent "$agent_dirs" >/dev/null 2>"$work/inj.err"
	rc=$?
	check "inject: idle ruby 3.1: --inject loads the agent ($(tail -n 1 "$work/inj.err"))" test $rc = 0
	bad=0
	for _ in $(seq 100); do "$RBSCOPE" backtraces -p $tpid --inject --agent "$agent_dirs" >/dev/null 2>&1 || bad=$((bad + 1)); done
	check "inject: 100 more --inject into one process: all answer ($bad failed)" test $bad = 0
	footprint_ok idle "idle ruby 3.1, after 101 injections"
	feed idle
	target_ok idle "idle ruby 3.1, after 101 injections"
fi

# Twenty processes at once (two busy), each injected in turn: twenty real injections, each loads the agent, no
# target is harmed.
names=""
for i in $(seq 20); do
	start_target many$i $([ $((i % 10)) = 0 ] && echo busy || echo idle) && names="$names many$i:$tpid"
done
loaded=0
for n in $names; do
	"$RBSCOPE" backtraces -p ${n#*:} --inject --agent "$agent_dirs" >"$work/inj.bt" 2>"$work/inj.err" &&
		grep -q 'agent loaded (--inject: ' "$work/inj.err" && grep -q '"locker"' "$work/inj.bt" && loaded=$((loaded + 1))
done
check "inject: 20 processes injected one after another: each loaded the agent and answered ($loaded of $(echo $names | wc -w))" \
	test "$loaded" = 20
harmed=""
for n in $names; do
	feed ${n%:*}
	grep -q -E '^results cv 3\.[0-4], lock ok, pop item, read hello, select ok, sleep 4\.[0-5]$' "$work/${n%:*}.out" &&
		grep -q -E '^checksum (ok|none) ' "$work/${n%:*}.out" && grep -q '^errors none$' "$work/${n%:*}.out" ||
		harmed="$harmed ${n%:*}($(grep -E '^(results|checksum|errors)' "$work/${n%:*}.out" | tr '\n' ' '))"
done
check "inject: 20 processes injected one after another: every parked thread of each woke with what it was fed, on time, no EINTR${harmed:+ (not:$harmed)}" \
	test -z "$harmed"

# Every agent command takes --inject, each into an idle process of its own: eval (the process opted in), heapdump
# (the dump reads), latency (of a probe nobody declared: the agent, loaded, says so).
for c in eval heapdump latency; do
	RBSCOPE_ALLOW_EVAL=1 start_target cmd$c idle || continue
	case $c in
	eval)
		"$RBSCOPE" eval -p $tpid --inject --agent "$agent_dirs" '[Thread.list.size > 1, 6 * 7]' >"$work/c.out" 2>"$work/c.err"
		rc=$?
		ok="test $rc = 0 && grep -q '^\[true, 42\]\$' '$work/c.out'" ;;
	heapdump)
		"$RBSCOPE" heapdump -p $tpid --inject --agent "$agent_dirs" -o "$work/inj-heap.json" >"$work/c.out" 2>"$work/c.err"
		rc=$?
		"$RBSCOPE" heap summary "$work/inj-heap.json" >"$work/c.out" 2>>"$work/c.err"
		ok="test $rc = 0 && grep -q ' STRING\$' '$work/c.out'" ;;
	latency)
		"$RBSCOPE" latency -p $tpid --inject --agent "$agent_dirs" app:nothing -d 1 >"$work/c.out" 2>"$work/c.err"
		rc=$?
		ok="test $rc = 12 && grep -q 'no enabled probe app:nothing in this process' '$work/c.err'" ;;
	esac
	check "inject: $c --inject loads the agent into an idle ruby 3.1 and answers (exit $rc; $(tail -n 1 "$work/c.err"))" \
		sh -c "$ok && grep -q 'agent loaded (--inject: ' '$work/c.err'"
	footprint_ok cmd$c "idle ruby 3.1 after $c --inject"
	feed cmd$c
	target_ok cmd$c "idle ruby 3.1 after $c --inject"
done

# rbscope killed at each step of an injection: the target lives on, its waits unharmed; a later --inject works.
for s in 1 2 3 4 5 6; do
	start_target kill$s idle || continue
	# (in a shell of its own, which reports the kill to /dev/null rather than to the test's output)
	RBSCOPE_TEST_INJECT_KILL_AT=$s bash -c '"$0" backtraces -p $1 --inject --agent "$2"; exit $?' "$RBSCOPE" $tpid "$agent_dirs" \
		>/dev/null 2>&1
	killed=$?
	alive=0
	kill -0 $tpid 2>/dev/null && alive=1
	"$RBSCOPE" backtraces -p $tpid --inject --agent "$agent_dirs" >/dev/null 2>"$work/kill$s.err"
	rc=$?
	check "inject: rbscope killed at step $s of 6 (exit $killed): the target lives, a later --inject loads the agent ($(tail -n 1 "$work/kill$s.err"))" \
		sh -c "test $killed = 137 && test $alive = 1 && test $rc = 0"
	footprint_ok kill$s "killed at step $s, then injected"
	feed kill$s
	target_ok kill$s "killed at step $s"
done

# A process in its own pid and mount namespaces (unshare), injected from the host.
if unshare --pid --fork --mount-proc true 2>/dev/null; then
	tfifo=$work/ns.in
	rm -f "$tfifo" && mkfifo "$tfifo"
	unshare --pid --fork --mount-proc ruby "$it" idle <"$tfifo" >"$work/ns.out" 2>&1 &
	nsparent=$!
	pids="$pids $nsparent"
	exec {fd_ns}>"$tfifo"
	if await_ready "$work/ns.out" $nsparent; then
		nspid=$(pgrep -P $nsparent | head -n 1)
		"$RBSCOPE" backtraces -p "${nspid:-0}" --inject --agent "$agent_dirs" >"$work/inj.bt" 2>"$work/inj.err"
		rc=$?
		check "inject: a process in its own pid namespace (pid 1 there), from the host ($(tail -n 1 "$work/inj.err"))" \
			sh -c "test $rc = 0 && grep -q '\"locker\"' '$work/inj.bt'"
		feed ns
		target_ok ns "pid namespace"
	fi
fi

# Refusals: one line, a distinct exit, nothing written.
RBSCOPE_DISABLE_ATTACH=1 ruby -e 'puts "ready"; $stdout.flush; sleep' >"$work/optout.out" 2>&1 &
op=$!
pids="$pids $op"
await_ready "$work/optout.out" $op
"$RBSCOPE" backtraces -p $op --inject --agent "$agent_dirs" 2>"$work/e"
rc=$?
check "inject: RBSCOPE_DISABLE_ATTACH=1 in the process's environment: refused, exit 13, one line ($(head -n 1 "$work/e"))" \
	sh -c "test $rc = 13 && grep -q 'forbids it (RBSCOPE_DISABLE_ATTACH=1' '$work/e' && test \$(wc -l <'$work/e') = 1"
if command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$RBSCOPE" backtraces -p $op --inject 2>"$work/e"
	rc=$?
	check "inject: as another user (nobody): exit 4, the hint names the process's user and ours ($(tail -n 1 "$work/e"))" \
		sh -c "test $rc = 4 && grep -q '^hint: process $op runs as uid 0, rbscope as uid 65534: .*CAP_SYS_PTRACE' '$work/e'"
else
	skipped "inject: no setpriv (util-linux) to run as another user"
fi
stop_ruby $op
if command -v setpriv >/dev/null; then
	ruby -e 'puts "ready"; $stdout.flush; sleep' >"$work/capless.out" 2>&1 &
	cp=$!
	pids="$pids $cp"
	await_ready "$work/capless.out" $cp
	setpriv --bounding-set -sys_ptrace --inh-caps -sys_ptrace "$RBSCOPE" backtraces -p $cp --inject 2>"$work/e"
	rc=$?
	check "inject: as root without CAP_SYS_PTRACE (a container's root): exit 4, the hint names the capability ($(tail -n 1 "$work/e"))" \
		sh -c "test $rc = 4 && grep -q '^hint: rbscope runs as root without CAP_SYS_PTRACE' '$work/e'"
	check "inject: ... and nothing was loaded" sh -c "! grep -q 'rbscope' '$work/capless.out' && ! grep -q rbscope /proc/$cp/maps"
	stop_ruby $cp
else
	skipped "inject: no setpriv (util-linux) to drop CAP_SYS_PTRACE"
fi

# Ruby 2.7 (glibc 2.31), 3.3 and 3.4 (chroots; agent.sh installed the gem in the last two, 2.7's is installed
# here): found without --agent, busy and idle.
for ver in $(rubies_except 3.1); do
	root=$("$top/scripts/ruby-chroot" $ver 2>/dev/null) || { skipped "inject: ruby $ver: no chroot"; continue; }
	if [ $ver = 2.7 ]; then
		mkdir -p "$root/tmp/rbscope-it" && cp "$gem" "$root/tmp/rbscope-it/"
		chroot "$root" gem install --local --no-document /tmp/rbscope-it/rbscope.gem >"$work/gem-$ver.log" 2>&1
		rc=$?
		check "gem: builds and installs offline in ruby $ver$([ $rc = 0 ] || tail -c 300 "$work/gem-$ver.log")" test $rc = 0
		[ $rc = 0 ] || continue
	fi
	for mode in busy idle; do
		name=r${ver%%.*}${ver##*.}$mode
		start_target $name $mode "$root" || continue
		"$RBSCOPE" backtraces -p $tpid --inject >"$work/inj.bt" 2>"$work/inj.err"
		rc=$?
		check "inject: $mode ruby $ver: the gem installed for it found and loaded ($(tail -n 1 "$work/inj.err"))" \
			sh -c "test $rc = 0 && grep -q '\"locker\"' '$work/inj.bt'"
		footprint_ok $name "$mode ruby $ver"
		feed $name
		target_ok $name "$mode ruby $ver"
	done
	# Only lock sleepers parked, main busy: from 3.3 on, the job is flagged by a helper thread for main.
	if [ $ver != 2.7 ]; then
		cp "$top/tests/integration/ruby/inject-futex.rb" "$root/tmp/rbscope-it/"
		chroot "$root" ruby /tmp/rbscope-it/inject-futex.rb >"$work/futex.out" 2>&1 &
		fx=$!
		pids="$pids $fx"
		if await_ready "$work/futex.out" $fx; then
			"$RBSCOPE" backtraces -p $fx --inject >/dev/null 2>"$work/inj.err"
			rc=$?
			check "inject: ruby $ver, only lock sleepers parked and main busy: a helper thread flags the job ($(tail -n 1 "$work/inj.err"))" \
				sh -c "test $rc = 0 && grep -q 'flagged by a helper thread' '$work/inj.err'"
		fi
		stop_ruby $fx
	fi
	# A daemon whose threads only sleep with a timeout (3.3 on marks such a thread blocked, as any C call without
	# the GVL): its sleeping thread is borrowed; no sleep comes back early.
	inject_sleeper "$root" "ruby $ver"
	# The host's 3.1 build offered to a 3.3 or 3.4 process: refused before anything is written.
	offer_agent "$root" agent31 "$ext/rbscope/rbscope.so" 'built for libruby-3.1' "ruby $ver offered an agent built for 3.1"
done

# A statically linked Ruby (scripts/static-ruby ruby: the VM in the executable, no libruby.so), busy and idle:
# the agent built for it (mkmf run by that Ruby, no libruby needed) loads; the one built for Debian's libruby is
# refused before anything is written.
if srb=$("$top/scripts/static-ruby" ruby 2>"$work/static.err"); then
	sext=$work/ext-static
	mkdir -p "$sext/rbscope"
	if (cd "$sext" && "$srb" "$top/ext/rbscope/extconf.rb" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make &&
		cp rbscope.so rbscope/) >"$work/static-ext.log" 2>&1; then
		target_ruby=$srb
		for mode in busy idle; do
			start_target static$mode $mode || continue
			if [ $mode = busy ]; then
				maps0=$(wc -l </proc/$tpid/maps)
				"$RBSCOPE" backtraces -p $tpid --inject --agent "$agent_dirs" 2>"$work/e"
				rc=$?
				check "inject: static ruby offered the agent built for libruby: refused, exit 13, nothing mapped ($(head -c 150 "$work/e"))" \
					sh -c "test $rc = 13 && grep -q 'built for libruby-3.1.*runs ruby' '$work/e' && test \$(wc -l </proc/$tpid/maps) = $maps0"
			fi
			"$RBSCOPE" backtraces -p $tpid --inject --agent "$top/lib:$sext" >"$work/inj.bt" 2>"$work/inj.err"
			rc=$?
			check "inject: $mode static ruby: the agent built for it loads and answers ($(tail -n 1 "$work/inj.err"))" \
				sh -c "test $rc = 0 && grep -q '\"locker\"' '$work/inj.bt' && grep -q 'inject-target.rb:[0-9]*:in' '$work/inj.bt'"
			footprint_ok static$mode "$mode static ruby"
			feed static$mode
			target_ok static$mode "$mode static ruby"
		done
		# ... and stripped (no .symtab: Ruby's API found in the .dynsym an executable exports to extensions)
		if cp "$srb" "$work/ruby-stripped" && strip "$work/ruby-stripped" && target_ruby=$work/ruby-stripped &&
			start_target staticstrip busy; then
			"$RBSCOPE" backtraces -p $tpid --inject --agent "$top/lib:$sext" >"$work/inj.bt" 2>"$work/inj.err"
			rc=$?
			check "inject: busy stripped static ruby (no .symtab): the agent loads and answers ($(tail -n 1 "$work/inj.err"))" \
				sh -c "! readelf -S '$work/ruby-stripped' | grep -q '\.symtab' && test $rc = 0 && grep -q '\"locker\"' '$work/inj.bt' && grep -q 'inject-target.rb:[0-9]*:in' '$work/inj.bt'"
			footprint_ok staticstrip "busy stripped static ruby"
			feed staticstrip
			target_ok staticstrip "busy stripped static ruby"
		fi
		target_ruby=
		# ... and offered to a 3.3 process, whose libruby would resolve it (its build links none to tell by):
		# refused by the Ruby it says it is built for, before anything is written.
		if root=$("$top/scripts/ruby-chroot" 3.3 2>/dev/null); then
			offer_agent "$root" agent-static "$sext/rbscope/rbscope.so" 'is built for Ruby 3.1, and process PID runs Ruby 3.3' \
				"ruby 3.3 offered the agent built for the static 3.1"
		fi
	else
		not_ok "inject: static ruby: the agent builds for it ($(tail -c 300 "$work/static-ext.log"))"
	fi
else
	skipped "inject: static ruby: none could be built here ($(head -n 1 "$work/static.err"))"
fi

# `make install` alone: the agent for every Ruby here (scripts/agents: the host's, and those of the chroots) beside
# the binary, placed by --inject in a process that has no gem, each Ruby in its own release's world; where a gem is
# installed, the gem is what loads.
inst=$work/inst
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$top" -s RBSCOPE_NO_DEPS=1 install DESTDIR="$inst" PREFIX=/usr/local \
	>"$work/install.log" 2>&1; then
	irb=$inst/usr/local/bin/rbscope
	check "make install: rbscope version lists the agents it installed ($("$irb" version | tail -n 1))" \
		sh -c "'$irb' version | tail -n 1 | grep -q ': 2.7 3.1 3.3 3.4\$'"
	for ver in $RUBIES; do
		root=/
		[ $ver = 3.1 ] || root=$("$top/scripts/ruby-chroot" $ver 2>/dev/null) || { skipped "inject: make install, ruby $ver: no chroot"; continue; }
		name=inst${ver%%.*}${ver##*.}
		hide_gems=1 start_target $name busy "$root" || { not_ok "inject: make install, ruby $ver: the target did not start"; continue; }
		"$irb" backtraces -p $tpid --inject >"$work/inj.bt" 2>"$work/inj.err"
		rc=$?
		check "inject: busy ruby $ver with no gem, after make install alone: the agent it carries is placed in the process's /tmp, loads and answers ($(tail -n 1 "$work/inj.err"))" \
			sh -c "test $rc = 0 && grep -q '\"locker\"' '$work/inj.bt' && grep -q '/tmp/rbscope-agent-$ver-[0-9a-f]*/rbscope/rbscope.so\$' /proc/$tpid/maps"
		footprint_ok $name "ruby $ver, the agent make install carries"
		feed $name
		target_ok $name "ruby $ver, the agent make install carries"
		# the gem installed for it, where there is one (the chroots': agent.sh and the loop above), still wins
		ls -d "${root%/}"/var/lib/gems/$ver.0/gems/rbscope-* >/dev/null 2>&1 || continue
		start_target ${name}gem busy "$root" || continue
		"$irb" backtraces -p $tpid --inject >"$work/inj.bt" 2>"$work/inj.err"
		rc=$?
		check "inject: busy ruby $ver with its gem installed, after make install: the gem loads, not the agent rbscope carries ($(tail -n 1 "$work/inj.err"))" \
			sh -c "test $rc = 0 && grep -q '/gems/.*/rbscope.so\$' /proc/$tpid/maps && ! grep -q rbscope-agent- /proc/$tpid/maps"
		feed ${name}gem
	done
else
	not_ok "make install: fails ($(tail -c 300 "$work/install.log"))"
fi
