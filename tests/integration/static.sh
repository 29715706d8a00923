# static.sh: the static binary (`make static`): no dynamic section; snapshot, record and --inject from it on each
# Ruby, run from inside that Ruby's Debian chroot with nothing of rbscope's in it but the binary (sourced by run).
# 3.1 is the host's: the binary runs in the bullseye chroot (glibc 2.31, no libbpf, libdw or libelf) against it.
sbin=$top/build/static/rbscope
# in_world ROOT SCRIPT TARGET_ROOT: SCRIPT run by sh in ROOT, in a mount namespace of its own with its /proc mounted
# and TARGET_ROOT's gem directory an empty tmpfs, after static-target.rb started under TARGET_ROOT's Ruby in that
# namespace (so the target has no gem; rbscope and the target see one filesystem). $P in SCRIPT is the target.
in_world() {
	local root=$1 script=$2 troot=$3 run
	mkdir -p "$root/tmp/rbscope-st" "$troot/tmp/rbscope-st"
	cp "$sbin" "$root/tmp/rbscope-st/rbscope"
	cp "$top/tests/integration/ruby/static-target.rb" "$troot/tmp/rbscope-st/"
	printf '%s\n' "$script" >"$root/tmp/rbscope-st/script.sh"
	run="{ [ ! -d ${troot%/}/var/lib/gems ] || mount -t tmpfs none ${troot%/}/var/lib/gems; } &&
		mount -t proc proc $root/proc &&
		{ chroot $troot ruby /tmp/rbscope-st/static-target.rb >$work/st-target.out 2>&1 & } &&
		for i in \$(seq 100); do grep -q ready $work/st-target.out && break; sleep 0.1; done &&
		P=\$! &&
		chroot $root env P=\$P sh /tmp/rbscope-st/script.sh; rc=\$?; kill -9 \$P; exit \$rc"
	timeout 120 unshare -m --propagation private sh -c "$run"
}

if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$top" -s static >"$work/static-build.log" 2>&1; then
	check "make static: one binary with no dynamic section ($(stat -c %s "$sbin") bytes; ldd: $(ldd "$sbin" 2>&1 | head -n 1 | tr -d '\t'))" \
		sh -c "ldd '$sbin' 2>&1 | grep -q 'not a dynamic executable' && ! readelf -d '$sbin' 2>/dev/null | grep -q NEEDED"
	check "make static: rbscope version lists the agents it carries ($("$sbin" version | tail -n 1))" \
		sh -c "'$sbin' version | tail -n 1 | grep -q ': 2.7 3.1 3.3 3.4\$'"
	for ver in $RUBIES; do
		if [ $ver = 3.1 ]; then
			troot=/ root=$("$top/scripts/ruby-chroot" 2.7 2>/dev/null) || { skipped "static: ruby 3.1: no bullseye chroot to run from"; continue; }
		else
			root=$("$top/scripts/ruby-chroot" $ver 2>/dev/null) || { skipped "static: ruby $ver: no chroot"; continue; }
			troot=$root
		fi
		rm -f "$root/tmp/rbscope-st/"*.out
		in_world "$root" '
			cd /tmp/rbscope-st
			ls /usr/lib/x86_64-linux-gnu/libbpf.so* /usr/lib/x86_64-linux-gnu/libdw.so* >libs.out 2>&1
			./rbscope snapshot -p $P >snap.out 2>&1; echo "exit $?" >>snap.out
			./rbscope record -p $P -d 2 --mode cpu -f collapsed -o rec.out 2>rec.err; echo "exit $?" >>rec.err
			./rbscope backtraces -p $P --inject >inj.out 2>&1; echo "exit $?" >>inj.out
			grep rbscope /proc/$P/maps >maps.out' "$troot"
		d=$root/tmp/rbscope-st
		what="static binary in $([ $ver = 3.1 ] && echo "bullseye's chroot, ruby 3.1 on the host" || echo "ruby $ver's chroot")"
		check "static: $what: none of its libraries there ($(head -c 120 "$d/libs.out"))" \
			sh -c "! grep -q '^/usr/lib' '$d/libs.out'"
		check "static: $what: snapshot reads the target's threads ($(grep -c '^Thread' "$d/snap.out") threads; $(tail -n 1 "$d/snap.out"))" \
			sh -c "grep -q '^exit 0' '$d/snap.out' && grep -q 'static_spin' '$d/snap.out' && grep -q '\"parked\"' '$d/snap.out'"
		n=$(awk '{ n += $NF } END { print n + 0 }' "$d/rec.out" 2>/dev/null)
		s=$(awk '/static_spin/ { n += $NF } END { print n + 0 }' "$d/rec.out" 2>/dev/null)
		check "static: $what: record samples it, mostly in static_spin ($s of $n; $(head -n 1 "$d/rec.err"))" \
			sh -c "grep -q '^exit 0' '$d/rec.err' && test $n -ge 40 && test \$(( $s * 10 )) -ge \$(( $n * 8 ))"
		check "static: $what: --inject with no gem places the agent it carries, which loads and answers ($(grep -m1 'rbscope:' "$d/inj.out"))" \
			sh -c "grep -q '^exit 0' '$d/inj.out' && grep -q 'static_spin' '$d/inj.out' && grep -q '/tmp/rbscope-agent-$ver-[0-9a-f]*/rbscope/rbscope.so' '$d/maps.out'"
	done
else
	not_ok "make static: fails ($(tail -c 300 "$work/static-build.log"))"
fi
