# usdt.sh: USDT probes declared from Ruby (Rbscope::Provider), checked with readelf, bpftrace, `rbscope probes` and
# `rbscope latency`, on real Ruby 3.1 (host), 3.3 and 3.4 (chroots, with the gem installed there). Sourced by run.
ut=$top/tests/integration/ruby/usdt-target.rb
uext=${RBSCOPE_EXT:-$top/build/ext}
ugem=$work/rbscope.gem
[ -s "$ugem" ] || (cd "$top" && gem build rbscope.gemspec --output "$ugem") >"$work/gem-build.log" 2>&1

# start_usdt VER MODE [noproc]: the target; sets upid and uout (and uchild in fork mode). In a chroot, /proc
# is mounted as everywhere in production (in a mount namespace of its own, gone with the process), unless noproc.
start_usdt() {
	local ver=$1 mode=$2
	uout=$work/usdt-$ver-$mode${3:+-$3}.out
	if [ "$ver" = 3.1 ]; then
		RUBYLIB="$top/lib:$uext" ruby -rrbscope "$ut" $mode >"$uout" 2>&1 &
	elif [ -n "${3:-}" ]; then
		chroot "$uroot" ruby -rrbscope /tmp/rbscope-it/usdt-target.rb $mode >"$uout" 2>&1 &
	else
		unshare --mount --propagation private sh -c 'mount -t proc proc "$1/proc" && exec chroot "$1" ruby -rrbscope \
			/tmp/rbscope-it/usdt-target.rb $2' sh "$uroot" "$mode" >"$uout" 2>&1 &
	fi
	upid=$!
	pids="$pids $upid"
	await_ready "$uout" $upid && { uchild=$ready_child; return 0; }
	not_ok "usdt: ruby $ver: $mode target did not start: $(head -c 300 "$uout")"
	return 1
}

# Is bpftrace usable here (installed, and the kernel takes uprobes)? Sets bpf_skip to the reason if not.
bpf_skip=""
command -v bpftrace >/dev/null || bpf_skip="bpftrace is not installed"

for ver in $(rubies_except 2.7); do
	if [ $ver != 3.1 ]; then
		uroot=$("$top/scripts/ruby-chroot" $ver 2>"$work/chroot.err") || { skipped "usdt: ruby $ver: no chroot"; continue; }
		mkdir -p "$uroot/tmp/rbscope-it" && cp "$ut" "$ugem" "$uroot/tmp/rbscope-it/"
		# The run's own gem, unless agent.sh installed this very one already.
		installed=$(chroot "$uroot" gem contents rbscope 2>/dev/null | grep '/ext/rbscope/usdt.c$')
		if [ -z "$installed" ] || ! cmp -s "$uroot$installed" "$top/ext/rbscope/usdt.c"; then
			chroot "$uroot" gem install --local --no-document /tmp/rbscope-it/rbscope.gem >"$work/gem-$ver-usdt.log" 2>&1 ||
				{ not_ok "usdt: ruby $ver: the gem does not install: $(tail -c 300 "$work/gem-$ver-usdt.log")"; continue; }
		fi
	fi
	start_usdt $ver plain || continue
	p=$upid
	while read -r _ name; do
		res=${name##* }
		case "$name" in
		*" ok") ok "usdt: ruby $ver: ${name% ok}" ;;
		*) not_ok "usdt: ruby $ver: $name" ;;
		esac
	done < <(grep '^check ' "$uout")
	check "usdt: ruby $ver: all 11 start-up checks ran" test "$(grep -c '^check ' "$uout")" = 11

	# The generated object, as any tool sees it.
	obj=$(sed -n 's/^ready [0-9]* //p' "$uout")
	cp "$obj" "$work/obj-$ver.so" 2>/dev/null
	readelf -n "$work/obj-$ver.so" >"$work/notes" 2>&1
	check "usdt: ruby $ver: readelf -n: three stapsdt notes of provider rbtest" \
		test "$(grep -c 'Provider: rbtest$' "$work/notes")" = 3
	check "usdt: ruby $ver: readelf -n: req's arguments are int64 and a string pointer" \
		sh -c "grep -A2 'Name: req\$' '$work/notes' | grep -q 'Arguments: -8@%rdi 8@%rsi\$'"
	check "usdt: ruby $ver: readelf -n: every probe has a semaphore" \
		sh -c "! grep -q 'Semaphore: 0x0*$' '$work/notes' && grep -q 'Semaphore: 0x0*[1-9a-f]' '$work/notes'"
	check "usdt: ruby $ver: a shared object that does not ask for an executable stack" \
		sh -c "readelf -h '$work/obj-$ver.so' | grep -q 'DYN' && readelf -lW '$work/obj-$ver.so' | grep -q 'GNU_STACK.* RW '"

	"$RBSCOPE" probes -p $p 'rbtest*' >"$work/usdt-probes" 2>"$work/e"
	check "usdt: ruby $ver: rbscope probes lists our 5 probes, all off" \
		sh -c "test \$(grep -c -E '^rbtest(_lat|_stack)?:(req|flags|tick|work) +off ' '$work/usdt-probes') = 5"
	if [ $ver = 3.1 ]; then
		"$RBSCOPE" probes -p $p 'ruby:*' >"$work/usdt-probes-ruby" 2>/dev/null
		check "usdt: ruby 3.1: rbscope probes lists Ruby's built-in probes too" grep -q '^ruby:method__entry ' "$work/usdt-probes-ruby"
	fi

	# rbscope latency: the trace_latency probe's histogram (sleeps of 1 ms and 4 ms, half each).
	"$RBSCOPE" latency -p $p rbtest_lat:work -d 3 --json >"$work/lat" 2>"$work/lat.err" &
	lp=$!
	await_true 25 sh -c "'$RBSCOPE' probes -p $p 'rbtest_lat:*' >'$work/usdt-probes2' 2>/dev/null &&
		grep -q '^rbtest_lat:work *enabled (1)' '$work/usdt-probes2'"
	wait $lp
	rc=$?
	check "usdt: ruby $ver: while rbscope latency runs, its probe is enabled (1)" grep -q '^rbtest_lat:work *enabled (1)' "$work/usdt-probes2"
	check "usdt: ruby $ver: latency: histogram with p50 in 0.9-6 ms and the 4 ms calls at the top" ruby -rjson -e '
		j = JSON.parse(File.readlines(ARGV[0]).last)
		exit(j["count"] >= 40 && j["p50"].between?(900_000, 6_000_000) && j["max"] >= 3_900_000 && j["p99"] >= 3_900_000 ? 0 : 1)' "$work/lat"
	check "usdt: ruby $ver: latency exits 0 after -d" test $rc = 0
	"$RBSCOPE" latency -p $p rbtest:req -d 1.5 -u ns >"$work/lat2" 2>&1
	check "usdt: ruby $ver: latency prints count, percentiles and a log2 histogram" \
		sh -c "grep -q 'rbtest:req  count [0-9]* (.*/s)  p50 .*p99 ' '$work/lat2' && grep -q '^\[.*) *[0-9]* |@' '$work/lat2'"
	enabled_is() { tail -n 1 "$uout" | grep -q "enabled $1"; } # the target's stats line, every 0.2 s
	await_true 20 enabled_is false
	for c in "fire with a wrong type raises" "fire with a wrong count raises" "a block returning a wrong type raises"; do
		check "usdt: ruby $ver: $c (checked while enabled)" grep -q "^check $c ok" "$uout"
	done
	check "usdt: ruby $ver: enabled? went true while attached and back to false" \
		sh -c "grep -q 'enabled true' '$uout' && tail -n 1 '$uout' | grep -q 'enabled false'"
	"$RBSCOPE" latency -p $p rbtest:nope -d 1 >/dev/null 2>"$work/e"
	rc=$?
	check "usdt: ruby $ver: latency of an unknown probe: exit 12, one line" sh -c "test $rc = 12 && grep -q 'no enabled probe rbtest:nope' '$work/e'"
	"$RBSCOPE" latency -p $p rbtest:tick -d 1 >/dev/null 2>"$work/e"
	rc=$?
	check "usdt: ruby $ver: latency of a probe without an Integer arg0: exit 12" sh -c "test $rc = 12 && grep -q 'not an Integer' '$work/e'"
	"$RBSCOPE" latency -p $p nocolon >/dev/null 2>&1
	check "usdt: ruby $ver: latency with a malformed probe: usage, exit 2" test $? = 2

	# bpftrace: lists the probes, attaching raises the semaphore, and fires arrive with their arguments.
	if [ -n "$bpf_skip" ]; then
		skipped "usdt: ruby $ver: bpftrace: $bpf_skip"
	else
		bpftrace -l "usdt:*:rbtest:*" -p $p >"$work/bl" 2>"$work/bl.err"
		check "usdt: ruby $ver: bpftrace -l lists the 3 probes" test "$(grep -c ':rbtest:\(req\|flags\|tick\)$' "$work/bl")" = 3
		bpftrace_for 3 -p $p -e 'usdt:*:rbtest:req { @h = hist(arg0); @s[str(arg1)] = count(); }' >"$work/bt" 2>&1 &
		bp=$!
		await_true 25 enabled_is true # attached
		"$RBSCOPE" probes -p $p 'rbtest:req' >"$work/usdt-probes3" 2>/dev/null
		wait $bp
		if grep -q '@s\[GET /1\]' "$work/bt"; then
			ok "usdt: ruby $ver: bpftrace attached: fires with their String argument"
			check "usdt: ruby $ver: bpftrace attached: hist(arg0)" grep -q '^@h:' "$work/bt"
			check "usdt: ruby $ver: rbscope probes shows the probe enabled under bpftrace" grep -q '^rbtest:req *enabled (1)' "$work/usdt-probes3"
			await_true 20 enabled_is false
			check "usdt: ruby $ver: enabled? back to false after bpftrace" sh -c "tail -n 1 '$uout' | grep -q 'enabled false'"
			bpftrace_for 5 -p $p -e 'usdt:*:rbtest_stack:work { printf("%s|%s\\n", str(arg0), str(arg1)); exit(); }' \
				>"$work/bts" 2>&1
			check "usdt: ruby $ver: trace_stack fires the method and its caller's lines" \
				grep -q 'Worker#work|.*usdt-target.rb:[0-9]' "$work/bts"
			# disable while bpftrace is attached: the process lives on, bpftrace ends normally
			bpftrace_for 3 -p $p -e 'usdt:*:rbtest:req { @n = count(); }' >"$work/bt2" 2>&1 &
			bp=$!
			# bpftrace raises the semaphore before its uprobe is live, and nothing says when that is: the
			# semaphore, then a second for the uprobe (without it, a fresh-clone run saw no fire counted)
			await_true 25 enabled_is true
			sleep 1
			kill -USR2 $p
			wait $bp
			rc=$?
			await_true 20 sh -c "tail -n 1 '$uout' | grep -q 'provider false'"
			check "usdt: ruby $ver: disable while bpftrace is attached: process healthy, provider off" \
				sh -c "kill -0 $p && tail -n 1 '$uout' | grep -q 'provider false'"
			check "usdt: ruby $ver: ... and bpftrace saw fires before it" grep -q '^@n: [1-9]' "$work/bt2"
		else
			skipped "usdt: ruby $ver: bpftrace cannot attach uprobes here: $(grep -m1 -i -E 'error|could' "$work/bt" | head -c 200)"
		fi
	fi
	stop_ruby $p

	# A fork's child keeps working probes (its own channel and semaphores).
	if [ $ver != 3.1 ] || ruby -e 'exit(Process.respond_to?(:_fork) ? 0 : 1)'; then
		start_usdt $ver fork && {
			"$RBSCOPE" latency -p $uchild rbtest:req -d 1.5 --json >"$work/latc" 2>"$work/latc.err"
			check "usdt: ruby $ver: a forked child's probe fires under rbscope latency" \
				ruby -rjson -e 'exit(JSON.parse(File.readlines(ARGV[0]).last)["count"] > 10 ? 0 : 1)' "$work/latc"
			if [ -z "$bpf_skip" ]; then
				bpftrace -l "usdt:*:rbtest:*" -p $uchild >"$work/blc" 2>/dev/null
				check "usdt: ruby $ver: bpftrace -l -p CHILD lists the child's probes" grep -q ':rbtest:req$' "$work/blc"
			fi
			stop_ruby $uchild
			stop_ruby $upid
		}
	fi

	# Disabled while `rbscope latency` listens, enabled again after the client left: fires must not touch its histogram.
	if [ $ver = 3.1 ]; then
		touch "$work/dis.wait"
		RUBYLIB="$top/lib:$uext" ruby -rrbscope "$top/tests/integration/ruby/usdt-disable.rb" "$work/dis.wait" >"$work/dis.out" 2>&1 &
		dp=$!
		pids="$pids $dp"
		await_ready "$work/dis.out" $dp
		"$RBSCOPE" latency -p $dp dis:req -d 1 >/dev/null 2>&1
		rm -f "$work/dis.wait"
		wait $dp
		check "usdt: ruby 3.1: disable under rbscope latency, client gone, enable and fire: the process lives" \
			grep -q '^alive false' "$work/dis.out"
	fi

	# Without /proc (a bare chroot) the object is loaded from a file in the agent's directory instead of a memfd.
	if [ $ver != 3.1 ]; then
		start_usdt $ver plain noproc && {
			"$RBSCOPE" latency -p $upid rbtest_lat:work -d 1.5 --json >"$work/latn" 2>"$work/latn.err"
			check "usdt: ruby $ver without /proc: the probes load from a file and fire" \
				ruby -rjson -e 'exit(JSON.parse(File.readlines(ARGV[0]).last)["count"] > 10 ? 0 : 1)' "$work/latn"
			stop_ruby $upid
		}
	fi

	# No memory per fire, by valgrind: 20,000 fires of each kind while `rbscope latency` listens, and no loss
	# record of the process may come from the extension's fire, enable or subscribe paths. Ruby's own unfreed
	# memory at exit is left aside, and so is what usdt_init's rb_define_method calls allocate once at load
	# (method definitions Ruby never frees: valgrind reports them from 3.1.7 on, whatever the extension does).
	if [ $ver = 3.1 ] && command -v valgrind >/dev/null; then
		RUBYLIB="$top/lib:$uext" valgrind --leak-check=full --num-callers=40 ruby -rrbscope \
			"$top/tests/integration/ruby/usdt-leak.rb" 20000 >"$work/vg.out" 2>"$work/vg.err" &
		vp=$!
		pids="$pids $vp"
		await_ready "$work/vg.out" $vp 300
		"$RBSCOPE" latency -p $vp leak:req -d 120 -i 60 >/dev/null 2>&1
		wait $vp
		if grep -q '^fired 20000 enabled true' "$work/vg.out" && grep -q 'LEAK SUMMARY' "$work/vg.err"; then
			check "usdt: ruby 3.1: valgrind: no leak from 40,000 fires (Integer, String, Symbol, Float, bool)" \
				sh -c "! grep -q -E 'by 0x[0-9A-F]+: (probe_fire|fire_arg|hist_add|usdt_(subscribe|unsubscribe|forked|elf_)|sub_(attach|detach)|provider_|load_object)' '$work/vg.err'"
		else
			not_ok "usdt: ruby 3.1: valgrind run did not complete: $(tail -c 300 "$work/vg.out")"
		fi
	elif [ $ver = 3.1 ]; then
		skipped "usdt: ruby 3.1: valgrind is not installed (no memory per fire)"
	fi

	# No memory per fire: 2,000,000 fires while enabled, RSS before and after.
	start_usdt $ver leak && {
		"$RBSCOPE" latency -p $upid rbtest:req -d 60 >/dev/null 2>&1 &
		lp=$!
		for _ in $(seq 300); do grep -q '^leak_kb' "$uout" && break; sleep 0.1; done
		kill -INT $lp 2>/dev/null
		wait $lp
		kb=$(sed -n 's/^leak_kb //p' "$uout")
		check "usdt: ruby $ver: 2,000,000 fires while enabled grow RSS by ${kb:-?} kB (< 1024)" test "${kb:-99999}" -lt 1024
		stop_ruby $upid
	}
done
