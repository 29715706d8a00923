# cores.sh: snapshots agree frame by frame with each thread's own Thread#backtrace_locations, live and from
# core files written by gdb's gcore (sourced by run). Bad cores get one line and their exit code.

bt_script=$top/tests/integration/ruby/backtraces.rb
compare=$top/tests/integration/ruby/compare-backtraces.rb
if ! command -v gcore >/dev/null; then
	skipped "cores: gdb's gcore is missing"
fi
# "static": a statically linked Ruby 3.1 (scripts/static-ruby), its VM in the executable.
for ver in $RUBIES static; do
	if ! start_ruby "$ver" "$bt_script"; then
		skipped "cores: ruby $ver: cannot start it here ($(head -c 200 "$work/chroot.err" 2>/dev/null))"
		continue
	fi
	root=/
	[ "$ver" = static ] || root=$("$top/scripts/ruby-chroot" "$ver")
	sysroot=()
	[ "$root" = / ] || sysroot=(--sysroot "$root")
	want="${root%/}/tmp/rbscope-backtraces-$pid.json"
	"$RBSCOPE" snapshot -p "$pid" --json >"$work/bt-live.json" 2>"$work/e"
	ruby "$compare" "$want" "$work/bt-live.json" >"$work/bt-live-compare.txt" 2>&1
	rc=$?
	# (what differs, when something does: the first thread's two lines, the want file's age and the threads' states)
	why=""
	[ $rc = 0 ] || why="; $(head -n 2 "$work/bt-live-compare.txt" | tr -s ' ' | cut -c1-400); want written $(stat -c %Y "$want" 2>/dev/null), now $(date +%s)"
	check "cores: ruby $ver: live snapshot agrees frame by frame with Thread#backtrace_locations ($(tail -n 1 "$work/bt-live-compare.txt")$why)" \
		test $rc = 0
	command -v gcore >/dev/null || { stop_ruby "$pid"; continue; }
	# glibc 2.41 (Debian sid, Ruby 3.4 here) guards thread stacks with madvise guard pages, which the
	# mapping does not show; gdb writes zeros for the pages it failed to read beside them, and a fiber's VM
	# stack can be one of those. rbscope must then say the fiber's frames are not in the core.
	allow=()
	[ "$ver" = 3.4 ] && allow=(fiber)
	modes="default"
	[ "$ver" = 3.1 ] || [ "$ver" = 3.3 ] || [ "$ver" = static ] && modes="default -a"
	for mode in $modes; do
		flag=()
		[ "$mode" = -a ] && flag=(-a)
		rm -f "$work"/core.*
		gcore "${flag[@]}" -o "$work/core" "$pid" >"$work/gcore.log" 2>&1
		core="$work/core.$pid"
		if [ ! -s "$core" ]; then
			not_ok "cores: ruby $ver: gcore $mode wrote no core ($(tail -n 1 "$work/gcore.log"))"
			continue
		fi
		"$RBSCOPE" snapshot --core "$core" "${sysroot[@]}" --json >"$work/bt-core.json" 2>"$work/e"
		rc=$?
		check "cores: ruby $ver: gcore $mode${sysroot:+ (a chrooted Ruby, --sysroot)}: snapshot --core agrees with Thread#backtrace_locations ($(ruby "$compare" "$want" "$work/bt-core.json" "${allow[@]}" | tail -n 1))" \
			sh -c "test $rc = 0 && ruby '$compare' '$want' '$work/bt-core.json' ${allow[*]} >/dev/null"
		if [ "$mode" = default ]; then
			"$RBSCOPE" snapshot --core "$core" "${sysroot[@]}" >"$work/bt-core.txt" 2>"$work/e"
			# (the threads that describe themselves, and the main one)
			nth=$(($(ruby -rjson -e 'print JSON.parse(File.read(ARGV[0])).size' "$want") + 1))
			check "cores: ruby $ver: text snapshot of the core names the process and its $nth threads" \
				sh -c "grep -q '^Core of process $pid: ruby ' '$work/bt-core.txt' && test \$(grep -c '^Thread ' '$work/bt-core.txt') = $nth"
			check "cores: ruby $ver: the main thread's tid is the pid, the others' among the core's" \
				grep -q "^Thread 1 \"main\" tid=$pid " "$work/bt-core.txt"
		fi
		if [ "$ver" = 3.3 ] && [ "$mode" = default ]; then
			mkdir -p "$work/emptyroot"
			"$RBSCOPE" snapshot --core "$core" --sysroot "$work/emptyroot" 2>"$work/e"; rc=$?
			check "cores: files missing under --sysroot: exit 8, one line naming libruby, and a hint" \
				sh -c "test $rc = 8 && grep -q \"needs '/.*libruby-3.3[^']*'\" '$work/e' && test \$(grep -vc '^hint:' '$work/e') = 1"
			"$RBSCOPE" snapshot --core "$core" --sysroot "$work/emptyroot" --ruby-version 3.3.8 >"$work/alone.txt" 2>"$work/e"; rc=$?
			check "cores: with --ruby-version, a core whose files are missing is read from the core alone" \
				sh -c "test $rc = 0 && grep -q 'Object#nap\|nap' '$work/alone.txt' && grep -q 'Thread::Queue#pop' '$work/alone.txt'"
		fi
		if [ "$ver" = 3.1 ] && [ "$mode" = default ]; then
			size=$(stat -c %s "$core")
			head -c $((size / 2)) "$core" >"$work/trunc.core"
			"$RBSCOPE" snapshot --core "$work/trunc.core" 2>"$work/e"; rc=$?
			check "cores: a truncated core: exit 8, one line saying it is cut short" \
				sh -c "test $rc = 8 && grep -q 'cut short' '$work/e' && test \$(wc -l <'$work/e') = 1"
			rm -f "$work/trunc.core"
			timeout 60 "$RBSCOPE" snapshot --core "$core" --ruby-version 2.6.0 >/dev/null 2>"$work/e"; rc=$?
			check "cores: a layout forced to the wrong version: no crash, no hang (exit $rc)" test "$rc" -lt 124
		fi
		rm -f "$core"
	done
	stop_ruby "$pid"
	rm -f "$want"
done

if command -v gcore >/dev/null; then
	"$RBSCOPE" snapshot --core /bin/true 2>"$work/e"; rc=$?
	check "cores: not a core file: exit 8, one line" sh -c "test $rc = 8 && grep -q 'not an x86-64 ELF core' '$work/e'"
	sleep 100 & spid=$!; pids="$pids $spid"
	gcore -o "$work/sleep" $spid >/dev/null 2>&1
	"$RBSCOPE" snapshot --core "$work/sleep.$spid" 2>"$work/e"; rc=$?
	check "cores: a core of a non-Ruby process: exit 5" sh -c "test $rc = 5 && grep -q 'not a Ruby process' '$work/e'"
	stop_ruby $spid
	rm -f "$work/sleep.$spid"
	# A file replaced since the core was written: its first page no longer matches the core's copy.
	lib=$(ldd "$(readlink -f "$(command -v ruby)")" | grep -o '/[^ ]*libruby[^ ]*')
	mkdir -p "$work/chglib"
	cp "$lib" "$work/chglib/"
	LD_LIBRARY_PATH=$work/chglib ruby --disable-gems -e 'puts "ready"; STDOUT.flush; sleep' >"$work/chg.out" &
	cpid=$!; pids="$pids $cpid"
	if await_ready "$work/chg.out" $cpid; then
		gcore -o "$work/chg" $cpid >/dev/null 2>&1
		printf 'X' | dd of="$work/chglib/$(basename "$lib")" bs=1 seek=9 conv=notrunc 2>/dev/null # e_ident padding
		"$RBSCOPE" snapshot --core "$work/chg.$cpid" 2>"$work/e"; rc=$?
		check "cores: a file changed since the core was written: exit 8, names it, says it differs" \
			sh -c "test $rc = 8 && grep -q 'chglib/libruby.*differs' '$work/e'"
		rm -f "$work/chg.$cpid"
	else
		not_ok "cores: the Ruby with a copied libruby did not start"
	fi
	stop_ruby $cpid
fi

# Cores the kernel writes (a Ruby killed by SIGABRT with `ulimit -c unlimited`, as a hung worker is killed
# for a post-mortem): the same check against Thread#backtrace_locations, on the host's Ruby and on a
# chroot's (--sysroot). Only where the kernel writes a plain file: a core_pattern that pipes to a program
# (systemd-coredump: `coredumpctl dump -o FILE` gives the same file) or names a path is left alone.
pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
[ "$(ulimit -H -c)" = unlimited ] || pattern="$pattern, with a hard core size limit of $(ulimit -H -c)"
case $pattern in
core)
	# (soft limits only: a hard one lowered cannot be raised again without CAP_SYS_RESOURCE)
	old_limit=$(ulimit -S -c) here=$PWD
	for ver in 3.1 3.3; do
		mkdir -p "$work/kcore"
		cd "$work/kcore"
		ulimit -S -c unlimited
		started=
		start_ruby "$ver" "$bt_script" && started=1
		ulimit -S -c "$old_limit"
		cd "$here"
		if [ -z "$started" ]; then
			skipped "cores: kernel core: ruby $ver: cannot start it here ($(head -c 200 "$work/chroot.err" 2>/dev/null))"
			continue
		fi
		root=$("$top/scripts/ruby-chroot" "$ver")
		sysroot=()
		[ "$root" = / ] || sysroot=(--sysroot "$root")
		# chroot(8) starts the Ruby in its new root's /
		dir=$work/kcore
		[ "$root" = / ] || dir=$root
		want="${root%/}/tmp/rbscope-backtraces-$pid.json"
		cp "$want" "$work/kcore-want.json"
		rm -f "$dir/core" "$dir/core.$pid"
		kill -ABRT "$pid"
		wait "$pid" 2>/dev/null
		core=$(ls "$dir/core.$pid" "$dir/core" 2>/dev/null | head -n 1)
		if [ -z "$core" ]; then
			not_ok "cores: kernel core: ruby $ver: SIGABRT with ulimit -c unlimited left no core in $dir"
			continue
		fi
		"$RBSCOPE" snapshot --core "$core" "${sysroot[@]}" --json >"$work/bt-kcore.json" 2>"$work/e"
		rc=$?
		check "cores: kernel core: ruby $ver${sysroot:+ (a chrooted Ruby, --sysroot)}: snapshot --core agrees with Thread#backtrace_locations ($(ruby "$compare" "$work/kcore-want.json" "$work/bt-kcore.json" | tail -n 1)$(head -c 200 "$work/e"))" \
			sh -c "test $rc = 0 && ruby '$compare' '$work/kcore-want.json' '$work/bt-kcore.json' >/dev/null"
		rm -f "$core" "$want"
	done
	;;
*) skipped "cores: kernel core: not checked here (core_pattern '$pattern')" ;;
esac
