# spy.sh: the Spy on our own workloads: snapshot, record, top and report on every Ruby, names under churn,
# reused iseqs, --subprocesses, --blocking, layouts from DWARF, bad input, unknown and newer Rubies.
# Sourced by run (SUITE=spy).
# "static": a statically linked Ruby 3.1 (scripts/static-ruby: miniruby, with its DWARF), then the same
# executable without its DWARF (the layout from the table, names from .symtab) and stripped of all but .dynsym.
static_ruby=
for ver in $RUBIES $RUBIES_STATIC; do
	rv=$ver
	case $ver in
	static-*)
		[ -n "$static_ruby" ] || continue
		static_ruby=$work/$ver/miniruby
		mkdir -p "$work/$ver"
		strip $([ $ver = static-nodebug ] && echo --strip-debug || echo --strip-all) -o "$static_ruby" "$("$top/scripts/static-ruby")" ;;
	esac
	case $ver in static*) rv=3.1 ;; esac
	if ! start_ruby "${ver%%-*}" "$workload"; then
		skipped "ruby $ver: cannot start it here ($(head -c 200 "$work/chroot.err" 2>/dev/null))"
		continue
	fi
	[ "$ver" = static ] && static_ruby=$("$top/scripts/static-ruby")
	snap="$work/snap-$ver.txt"
	"$RBSCOPE" snapshot -p "$pid" >"$snap" 2>"$work/snap.err"
	check "ruby $ver: snapshot exits 0" test $? = 0
	check "ruby $ver: snapshot names the version" grep -q "ruby $rv" "$snap"
	check "ruby $ver: all 7 threads" test "$(grep -c '^Thread ' "$snap")" = 7
	for name in sleeper reader queue dynamic ghost fiber; do
		check "ruby $ver: thread '$name' named" grep -q "^Thread [0-9]* \"$name\" tid=[1-9]" "$snap"
	done
	check "ruby $ver: the main thread is running" grep -q '"main" tid=[0-9]* running' "$snap"
	check "ruby $ver: recursion 150 deep, every frame" test "$(grep -c 'Deep#recurse' "$snap")" -ge 151
	check "ruby $ver: singleton method qualified (Deep.spin)" grep -q '^    Deep\.spin ' "$snap"
	check "ruby $ver: C method named on stripped libruby (Kernel#sleep)" grep -q 'Kernel#sleep' "$snap"
	check "ruby $ver: define_method frame (Dyn#dynamic)" grep -q 'Dyn#dynamic' "$snap"
	check "ruby $ver: method_missing frame" grep -q 'Dyn#method_missing' "$snap"
	check "ruby $ver: Queue#pop" grep -q 'Queue#pop' "$snap"
	check "ruby $ver: IO#read in the reader" sh -c "grep -A1 '\"reader\"' '$snap' | grep -q 'IO#read'"
	check "ruby $ver: reader blocked or sleeping, not running" grep -Eq '"reader" tid=[0-9]* (blocked|sleeping)' "$snap"
	l=$(line_of 'name = "sleeper"; sleep' "$workload")
	check "ruby $ver: exact line of the sleeper (line $l)" sh -c "grep -A2 '\"sleeper\"' '$snap' | grep -q 'workload.rb:$l)'"
	l=$(line_of 'return Deep.spin if n == 0' "$workload")
	check "ruby $ver: exact line of the deepest recurse (line $l)" grep -q "Deep#recurse (.*workload.rb:$l)" "$snap"
	"$RBSCOPE" snapshot -p "$pid" --json >"$work/snap.json"
	check "ruby $ver: --json parses and has 7 threads" ruby -rjson -e \
		'j = JSON.parse(File.read(ARGV[0])); exit(j["threads"].size == 7 && j["threads"].all? { |t| t["tid"] > 0 } ? 0 : 1)' "$work/snap.json"

	rec="$work/rec-$ver.txt"
	"$RBSCOPE" record -p "$pid" -r 200 -d 1 -f collapsed -o "$rec" --raw "$work/rec-$ver.raw" 2>"$work/rec.err"
	check "ruby $ver: record exits 0" test $? = 0
	check "ruby $ver: collapsed stacks hold the hot loop" grep -q 'Deep\.spin.*;Kernel#loop' "$rec"
	# In the recording, not the snapshot: ~3% of the time Kernel#loop is between two yields.
	check "ruby $ver: block qualified (block in Deep.spin)" grep -q ';block in Deep\.spin' "$rec"
	total=$(awk '{s += $NF} END {print s + 0}' "$rec")
	check "ruby $ver: record took >= 150 main-thread samples at 200 Hz for 1 s ($total in all)" \
		test "$(grep 'Deep\.spin' "$rec" | awk '{s += $NF} END {print s + 0}')" -ge 150
	check "ruby $ver: record prints a final status line" grep -q 'samples in' "$work/rec.err"
	"$RBSCOPE" report -i "$work/rec-$ver.raw" -f collapsed -o "$work/rep-$ver.txt"
	check "ruby $ver: report of --raw equals the recorded profile" cmp -s "$rec" "$work/rep-$ver.txt"
	"$RBSCOPE" report -i "$work/rec-$ver.raw" -f summary >"$work/sum.txt"
	check "ruby $ver: summary lists Deep.spin" grep -q 'Deep\.spin' "$work/sum.txt"
	"$RBSCOPE" record -p "$pid" -r 5000 -d 1 -f summary -o "$work/fast.txt" 2>"$work/fast.err"
	check "ruby $ver: record at 5000 Hz" grep -Eq '^rbscope: [0-9]{4,} samples' "$work/fast.err"
	# Hash#key? is ~1% of the loop: checked on the 5000 Hz recording, where it cannot be missed by chance.
	check "ruby $ver: C methods named in the profile (Array#each, Hash#key?)" \
		sh -c "grep -q ' Array#each ' '$work/fast.txt' && grep -q ' Hash#key? ' '$work/fast.txt'"
	"$RBSCOPE" top -p "$pid" -i 0.5 -n 2 >"$work/top.txt" 2>&1
	check "ruby $ver: top (not a tty) prints tables" test "$(grep -c '^rbscope top' "$work/top.txt")" = 2
	check "ruby $ver: top shows the hot function" grep -q 'Deep\.spin' "$work/top.txt"
	check "ruby $ver: top shows the VM's GC counts and heap slots ($(grep -m1 '^gc:' "$work/top.txt"))" \
		grep -Eq '^gc: [0-9]+ collections \([0-9]+ major\).*; heap slots: [1-9][0-9]* live, [0-9]+ free$' "$work/top.txt"
	stop_ruby "$pid"
done
static_ruby=

# A thread created while main holds the GVL in one long C call (unstarted.rb): it has never run. It is shown, with
# no frames (2.7 and 3.1: no VM stack yet, "not started yet"), and not read again and again as if it were moving.
for ver in $RUBIES; do
	start_ruby "$ver" "$top/tests/integration/ruby/unstarted.rb" || { skipped "ruby $ver: unstarted: cannot start it"; continue; }
	"$RBSCOPE" snapshot -p "$pid" >"$work/unstarted.txt" 2>&1
	"$RBSCOPE" snapshot --json -p "$pid" >"$work/unstarted.json" 2>&1
	grep -q '^digits' "$work/ruby-$ver.out" && early=" (too late: the C call had returned)" || early=""
	want='no Ruby frames'
	case $ver in 2.7 | 3.1) want='not started yet: no frames' ;; esac
	check "ruby $ver: a thread that has not run yet is shown with no frames, '$want', not as changing too fast$early ($(sed -n '/^Thread 2/,$p' "$work/unstarted.txt" | tr '\n' ' ' | cut -c1-160))" \
		sh -c "test -z '$early' && sed -n '/^Thread 2/,\$p' '$work/unstarted.txt' | grep -q '^    ($want)\$' && ! grep -q 'too fast' '$work/unstarted.txt' &&
			ruby -rjson -e 'j = JSON.parse(File.read(ARGV[0])); t = j[\"threads\"][1]; exit(t[\"frames\"].empty? && (t[\"unstarted\"] == true) == (ARGV[1] != \"no Ruby frames\"))' '$work/unstarted.json' '$want'"
	stop_ruby "$pid"
done

# Names under churn: methods returning and calling at the same depth between two reads.
for ver in $(rubies_except 2.7); do
	if ! start_ruby "$ver" "$top/tests/integration/ruby/names.rb"; then
		skipped "ruby $ver: names: cannot start the program"
		continue
	fi
	"$RBSCOPE" record -p "$pid" -r 1000 -d 2 -f summary -o "$work/names.txt" 2>/dev/null
	stop_ruby "$pid"
	# (Gem.suffix_pattern is so short that it is seldom caught in a consistent read: it may stay bare.)
	check "ruby $ver: names: module singleton methods qualified (Gem::Requirement.parse, Outer.helper)" \
		sh -c "grep -q ' Gem::Requirement\.parse ' '$work/names.txt' && grep -q ' Outer\.helper ' '$work/names.txt'"
	check "ruby $ver: names: a method that used \$~ qualified (Outer.matcher)" \
		grep -q ' Outer\.matcher ' "$work/names.txt"
	check "ruby $ver: names: no method named after another (Outer.helper only in names.rb)" \
		sh -c "! grep 'Outer\.helper' '$work/names.txt' | grep -v 'names\.rb'"
	bare=$(awk '$5 ~ /^(parse|helper|suffix_pattern|new|spin|matcher)$/ { printf "%s %s ", $5, $1 }' "$work/names.txt")
	check "ruby $ver: names: no more than 3% of samples under a bare, unqualified method name (${bare:-none})" \
		awk '$5 ~ /^(parse|helper|suffix_pattern|new|spin|matcher)$/ { bare += $1 } END { exit !(bare <= 3) }' "$work/names.txt"
done

# Reused iseq addresses: methods defined, run and dropped, with GC; no frame named after an older one.
if start_ruby 3.1 "$top/tests/integration/ruby/churn.rb"; then
	"$RBSCOPE" record -p "$pid" -r 1000 -d 2 -f speedscope -o "$work/churn.json" 2>/dev/null
	stop_ruby "$pid"
	ruby -rjson -e 'j = JSON.parse(File.read(ARGV[0])); fr = j["shared"]["frames"]; max = n = stale = 0
		j["profiles"][0]["samples"].each { |s| s.each { |i| m = fr[i]["name"][/churn_(\d+)/, 1] or next
			m = m.to_i; n += 1; stale += 1 if m < max - 20; max = m if m > max } }
		puts "#{n} churn frames, #{stale} stale"; exit(n > 100 && stale * 100 <= n ? 0 : 1)' "$work/churn.json" >"$work/churn.out" 2>&1
	rc=$?
	# (A new iseq whose code also landed where the old one's was cannot be told apart by its pc: <= 1%.)
	check "iseq reuse: frames named after a freed method <= 1% ($(cat "$work/churn.out"); 12% before the pc check)" \
		test $rc = 0
fi

# --subprocesses: a master that forks two workers (a preforking server in miniature).
if start_ruby 3.1 "$top/tests/integration/ruby/forks.rb"; then
	"$RBSCOPE" record -p "$pid" -s -r 200 -d 2 -f collapsed -o "$work/forks.txt" 2>"$work/forks.err"
	check "subprocesses: both workers sampled, each under its own process root with Worker#work" \
		test "$(grep '^process [0-9]* forks.rb worker;.*Worker#work' "$work/forks.txt" | cut -d' ' -f2 | sort -u | wc -l)" = 2
	check "subprocesses: the master too (Process.waitall)" grep -q "^process $pid .*Process\.waitall" "$work/forks.txt"
	check "subprocesses: says how many it followed" grep -q 'followed 2 subprocesses' "$work/forks.err"
	"$RBSCOPE" record -p "$pid" -r 200 -d 0.5 -f collapsed -o "$work/noforks.txt" 2>/dev/null
	check "subprocesses: not followed without -s" sh -c "! grep -q 'Worker#work' '$work/noforks.txt'"
	stop_ruby "$pid"
	pkill -f 'forks.rb worker'
fi
# -s --raw: each busy worker is sampled on its own CPU too, its captures timed before the tick that drains them,
# after the samples of the process ticked ahead of it: the file keeps them all and report reads them all back.
for ver in 3.1 3.4; do
	start_ruby $ver "$top/tests/integration/ruby/forks.rb" || { skipped "subprocesses: ruby $ver: cannot start it here"; continue; }
	"$RBSCOPE" record -p "$pid" -s -r 500 -d 2 -f collapsed -o "$work/forks-raw.col" --raw "$work/forks.raw" 2>/dev/null
	"$RBSCOPE" report -i "$work/forks.raw" -f collapsed -o "$work/forks-report.col" 2>"$work/forks-report.err"
	rc=$?
	stop_ruby "$pid"
	pkill -f 'forks.rb worker'
	a=$(awk '{ n += $NF } END { print n + 0 }' "$work/forks-raw.col") b=$(awk '{ n += $NF } END { print n + 0 }' "$work/forks-report.col")
	check "subprocesses: ruby $ver: -s --raw: report reads back every sample (exit $rc; $b of $a$(head -c 100 "$work/forks-report.err"))" \
		sh -c "test $rc = 0 && test $a -gt 500 && test $a = $b && ! test -s '$work/forks-report.err'"
	# Go's viewer, no flags: this Ruby's names as they are ('<main>', 'block in Worker#work'), none cut at () or <>.
	if command -v go >/dev/null; then
		"$RBSCOPE" report -i "$work/forks.raw" -f pprof -o "$work/forks.pb.gz" 2>/dev/null
		PPROF_TMPDIR=$work HOME=$work go tool pprof -top "$work/forks.pb.gz" >"$work/forks-top.txt" 2>/dev/null
		check "subprocesses: ruby $ver: go tool pprof -top names '<main>' and 'block in Worker#work', nothing '<unknown>'" \
			sh -c "grep -q ' <main>\$' '$work/forks-top.txt' && grep -q ' block in Worker#work\$' '$work/forks-top.txt' &&
				! grep -q '<unknown>\|block  in' '$work/forks-top.txt'"
	fi
done

# --blocking: every stack read while the threads stand still; the process runs on, and gets its signals.
if start_ruby 3.1 "$workload"; then
	"$RBSCOPE" record -p "$pid" --blocking -r 500 -d 1 -f collapsed -o "$work/blocking.txt" 2>"$work/blocking.err"; rc=$?
	check "blocking: exit 0, nothing torn or salvaged" \
		sh -c "test $rc = 0 && grep -q ' 0 stacks salvaged, 0 torn reads' '$work/blocking.err'"
	check "blocking: every thread sampled (7 per tick)" \
		test "$(awk '{s += $NF} END {print s % 7}' "$work/blocking.txt")" = 0
	sleep 0.2
	check "blocking: the process is left running, no thread stopped" \
		sh -c "! grep -q '^State:.*\(stopped\|tracing stop\)' /proc/$pid/task/*/status"
	stop_ruby "$pid"
fi
if start_ruby 3.1 "$top/tests/integration/ruby/signals.rb"; then
	"$RBSCOPE" record -p "$pid" --blocking -r 1000 -d 2 -f collapsed -o /dev/null 2>/dev/null &
	rpid=$!
	sleep 0.3
	for _ in $(seq 20); do kill -USR1 "$pid"; sleep 0.05; done
	wait $rpid
	kill -USR2 "$pid"; sleep 0.3
	check "blocking: no signal lost (20 SIGUSR1 sent while sampling: $(grep usr1 "$work/ruby-3.1.out"))" \
		grep -q '^usr1 20$' "$work/ruby-3.1.out"
	stop_ruby "$pid"
fi

# Layouts from DWARF: the layout probe, built with -g against each Ruby's own headers, must read back
# through rbscope's DWARF reader as exactly the generated table (constants taken from another series).
if "$top/tools/gen-layouts" --probe-dir "$work/probes" 3.1 3.3 2.7 3.4 >"$work/probes.log" 2>&1; then
	measured=$(grep -o '"[a-z_0-9]*", "' "$top/src/ruby/layouts/dwarf_paths.c" | cut -d'"' -f2 | sort -u)
	for v in 3_1 3_3 2_7 3_4; do
		"$RBSCOPE" layout --dwarf "$work/probes/probe-$v" --base 3.3 >"$work/dwarf-$v.txt" 2>&1
		# rb_objspace is gc.c's own: its fields are measured on gc.c compiled with -g (kept as gc-X_Y.o).
		"$RBSCOPE" layout --dwarf "$work/probes/gc-$v.o" --base 3.3 >"$work/dwarf-gc-$v.txt" 2>&1
		: >"$work/dwarf-diff-$v"
		for f in $measured cfp_size st_entry_size insn_info_size; do
			d="$work/dwarf-$v.txt"
			case $f in gc_*) d="$work/dwarf-gc-$v.txt" ;; esac
			a=$(grep "^	\.$f = " "$work/probes/ruby_$v.c"); b=$(grep "^	\.$f = " "$d")
			[ "$a" = "$b" ] || echo "$f: ${a#*= } vs ${b#*= }" >>"$work/dwarf-diff-$v"
		done
		check "dwarf: Ruby ${v/_/.} read from DWARF equals its table, field by field ($(head -c 200 "$work/dwarf-diff-$v"))" \
			test ! -s "$work/dwarf-diff-$v"
		check "dwarf: the committed table for Ruby ${v/_/.} is what its headers give (tools/gen-layouts)" \
			cmp -s <(grep '^	\.' "$work/probes/ruby_$v.c" | grep -v '\.version\|\.api_teeny') \
				<(grep '^	\.' "$top/src/ruby/layouts/ruby_$v.c" | grep -v '\.version\|\.api_teeny')
	done
	# Debian's ruby3.1-dev ships the MJIT header of its own release only: once it moves past 3.1.7, say so.
	if "$top/tools/gen-layouts" --probe-dir "$work/probes" 3.1.7 >>"$work/probes.log" 2>&1; then
		check "dwarf: the committed table for Ruby 3.1.7 is what its MJIT header gives (tools/gen-layouts)" \
			cmp -s <(grep '^	\.' "$work/probes/ruby_3_1_7.c") <(grep '^	\.' "$top/src/ruby/layouts/ruby_3_1_7.c")
	else
		skipped "dwarf: no MJIT header of Ruby 3.1.7 here ($(tail -n 1 "$work/probes.log"))"
	fi
else
	skipped "dwarf: cannot build the layout probes here ($(tail -n 1 "$work/probes.log"))"
fi
"$RBSCOPE" layout --dwarf /bin/true 2>"$work/e"; rc=$?
check "dwarf: a file without Ruby's DWARF: exit 6 and says so" sh -c "test $rc = 6 && grep -q 'no DWARF' '$work/e'"

# Bad input and faults: each gets one line, a hint, and its documented exit code.
"$RBSCOPE" snapshot -p 999999 2>"$work/e"; rc=$?
check "no such pid: exit 3" test $rc = 3
check "no such pid: says so" grep -q 'no such process' "$work/e"
sleep 100 & spid=$!; pids="$pids $spid"
"$RBSCOPE" snapshot -p $spid 2>"$work/e"; rc=$?
check "not a Ruby process: exit 5 and a message" sh -c "test $rc = 5 && grep -q 'not a Ruby process' '$work/e'"
stop_ruby $spid
if start_ruby 3.1 "$workload"; then
	if command -v setpriv >/dev/null; then
		# A copy nobody can reach, wherever the checkout lives.
		chmod 755 "$work" && cp "$RBSCOPE" "$work/rbscope-nobody" && chmod 755 "$work/rbscope-nobody"
		cp "$top/tests/integration/ruby/undumpable.rb" "$work/" && chmod 644 "$work/undumpable.rb"
		setpriv --reuid=nobody --regid=nogroup --clear-groups "$work/rbscope-nobody" snapshot -p "$pid" 2>"$work/e"; rc=$?
		check "permission denied: exit 4, the hint names the process's user and ours ($(tail -n 1 "$work/e"))" \
			sh -c "test $rc = 4 && grep -q '^hint: process $pid runs as uid 0, rbscope as uid 65534: ' '$work/e'"
		# Root without CAP_SYS_PTRACE (a container's root, by default): refused, and the hint says to add it.
		setpriv --bounding-set -sys_ptrace --inh-caps -sys_ptrace "$RBSCOPE" snapshot -p "$pid" 2>"$work/e"; rc=$?
		check "permission denied to root without CAP_SYS_PTRACE: exit 4, the hint names the capability to add ($(tail -n 1 "$work/e"))" \
			sh -c "test $rc = 4 && grep -q '^hint: rbscope runs as root without CAP_SYS_PTRACE (in a container?): .*--cap-add SYS_PTRACE' '$work/e'"
		# Its own user is not enough for a process that made itself undumpable: the hint says so.
		setpriv --reuid=nobody --regid=nogroup --clear-groups ruby "$work/undumpable.rb" >"$work/undumpable.out" 2>&1 &
		upid=$!
		pids="$pids $upid"
		if await_ready "$work/undumpable.out" $upid; then
			setpriv --reuid=nobody --regid=nogroup --clear-groups "$work/rbscope-nobody" snapshot -p $upid 2>"$work/e"
			rc=$?
			check "permission denied by an undumpable process of our own user: exit 4, the hint says why ($(tail -n 1 "$work/e"))" \
				sh -c "test $rc = 4 && grep -q '^hint: process $upid is not dumpable' '$work/e'"
			"$RBSCOPE" snapshot -p $upid >"$work/undumpable.snap" 2>&1
			check "an undumpable process is read by root" grep -q 'undumpable.rb' "$work/undumpable.snap"
		else
			check "the undumpable process started ($(head -c 200 "$work/undumpable.out"))" false
		fi
		stop_ruby $upid
	else
		skipped "permission denied: setpriv is missing"
	fi
	stop_ruby "$pid"
fi
# An unsupported Ruby: the host's libruby with its version string changed (3.1.2 -> 3.9.2): no table, no DWARF.
lib=$(ldd "$(readlink -f "$(command -v ruby)")" | grep -o '/[^ ]*libruby[^ ]*')
mkdir -p "$work/fakelib"
hostver=$(ruby -e 'print RUBY_VERSION')
fakever=$(echo "$hostver" | sed 's/^\([0-9]*\)\.[0-9]\./\1.9./') # same length: X.9.Z
V=$hostver F=$fakever perl -0777 -pe 's/\Q$ENV{V}\E\0/$ENV{F}\0/' <"$lib" >"$work/fakelib/$(basename "$lib")"
LD_LIBRARY_PATH=$work/fakelib ruby --disable-gems -e 'puts "ready #{RUBY_VERSION}"; STDOUT.flush; sleep' >"$work/fake.out" &
fpid=$!; pids="$pids $fpid"
for _ in $(seq 50); do grep -q ready "$work/fake.out" && break; sleep 0.1; done
"$RBSCOPE" snapshot -p $fpid 2>"$work/e"; rc=$?
check "unsupported Ruby ($(cat "$work/fake.out")): exit 6, names the version, one line and a hint" \
	sh -c "test $rc = 6 && grep -q 'runs Ruby $fakever: unsupported' '$work/e' && grep -q '^hint:.*3\.4, 4\.0.*--ruby-version' '$work/e' && test \$(grep -vc '^hint:' '$work/e') = 1"
"$RBSCOPE" snapshot -p $fpid --ruby-version "$hostver" >"$work/forced.txt" 2>"$work/e"; rc=$?
check "--ruby-version $hostver reads the Ruby that says $fakever (exit 0, its main thread's frames)" \
	sh -c "test $rc = 0 && grep -q 'Kernel#sleep' '$work/forced.txt'"
"$RBSCOPE" snapshot -p $fpid --ruby-version 9.9.9 2>"$work/e"; rc=$?
check "--ruby-version with no table: exit 2, names the series there are tables for" \
	sh -c "test $rc = 2 && grep -q \"no layout table for Ruby '9.9.9'.*2\.6, 2\.7\" '$work/e'"
stop_ruby $fpid
# A patch release newer than any known: the series' newest table, and a note that says so.
newver=$(echo "$hostver" | sed 's/\.[0-9]$/.9/') # 3.1.7 -> 3.1.9, same length
if [ "$newver" != "$hostver" ]; then
	mkdir -p "$work/newlib"
	V=$hostver F=$newver perl -0777 -pe 's/\Q$ENV{V}\E\0/$ENV{F}\0/' <"$lib" >"$work/newlib/$(basename "$lib")"
	LD_LIBRARY_PATH=$work/newlib ruby --disable-gems -e 'puts "ready #{RUBY_VERSION}"; STDOUT.flush; sleep' >"$work/new.out" &
	npid=$!; pids="$pids $npid"
	await_ready "$work/new.out" $npid
	"$RBSCOPE" snapshot -p $npid >"$work/newer.txt" 2>"$work/e"; rc=$?
	check "a newer patch release ($(cat "$work/new.out")): read with the series' table, and a note says so" \
		sh -c "test $rc = 0 && grep -q 'Kernel#sleep' '$work/newer.txt' && grep -q 'runs Ruby $newver, newer than any 3\.1 release known here' '$work/e'"
	stop_ruby $npid
fi
"$RBSCOPE" record -r 100 -f collapsed -o "$work/exit.txt" -- ruby -e 'def work; 300_000.times { |i| i.to_s }; end; 3.times { work }' 2>"$work/e"; rc=$?
check "target exits mid-record: exit 0" test $rc = 0
check "target exits mid-record: profile written" grep -q 'Object#work\|work' "$work/exit.txt"
check "target exits mid-record: says so" grep -q 'exited' "$work/e"
head -c 100 /dev/urandom >"$work/junk.raw"
"$RBSCOPE" report -i "$work/junk.raw" 2>"$work/e"; rc=$?
check "corrupt recording: exit 8" test $rc = 8
"$RBSCOPE" report -i "$work/junk.raw" -f nonsense 2>"$work/e"; rc=$?
check "unknown format: exit 2, lists the valid ones" sh -c "test $rc = 2 && grep -q 'collapsed' '$work/e'"
"$RBSCOPE" frobnicate 2>/dev/null; rc=$?
check "unknown command: exit 2" test $rc = 2
