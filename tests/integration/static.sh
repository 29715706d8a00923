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
	# host names: /etc/hosts and DNS only, whatever modules nsswitch.conf names (a static glibc loading the host's
	# libnss_*.so, built against another glibc, is undefined behaviour)
	printf 'hosts: mymachines mdns4_minimal [NOTFOUND=return] resolve files myhostname dns\n' >"$work/nsswitch.conf"
	port=$((24000 + $$ % 20000))
	unshare -m --propagation private sh -c "mount --bind '$work/nsswitch.conf' /etc/nsswitch.conf &&
		strace -f -e trace=openat,open '$sbin' serve --all -l localhost:$port -d 1" >"$work/nss.out" 2>&1
	check "make static: host names resolve by /etc/hosts and DNS, no NSS module loaded, whatever nsswitch.conf names ($(grep -m1 -E 'serving|rbscope:' "$work/nss.out"))" \
		sh -c "grep -q 'serving on http://localhost:$port/' '$work/nss.out' && grep -q '/etc/hosts' '$work/nss.out' && ! grep -q 'libnss_' '$work/nss.out'"
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
			./rbscope trace -p $P --inject -m "Object#static_spin(n)" -d 1 >trace.out 2>&1; echo "exit $?" >>trace.out
			./rbscope backtraces -p $P >inj.out 2>&1; echo "exit $?" >>inj.out
			grep rbscope /proc/$P/maps >maps.out' "$troot"
		d=$root/tmp/rbscope-st
		what="static binary in $([ $ver = 3.1 ] && echo "bullseye's chroot, ruby 3.1 on the host" || echo "ruby $ver's chroot")"
		check "static: $what: none of its libraries there (libbpf.so, libdw.so: $(grep -c '^/usr/lib' "$d/libs.out") found)" \
			sh -c "! grep -q '^/usr/lib' '$d/libs.out'"
		check "static: $what: snapshot reads the target's threads ($(grep -c '^Thread' "$d/snap.out") threads; $(tail -n 1 "$d/snap.out"))" \
			sh -c "grep -q '^exit 0' '$d/snap.out' && grep -q 'static_spin' '$d/snap.out' && grep -q '\"parked\"' '$d/snap.out'"
		n=$(awk '{ n += $NF } END { print n + 0 }' "$d/rec.out" 2>/dev/null)
		s=$(awk '/static_spin/ { n += $NF } END { print n + 0 }' "$d/rec.out" 2>/dev/null)
		check "static: $what: record samples it, mostly in static_spin ($s of $n; $(head -n 1 "$d/rec.err"))" \
			sh -c "grep -q '^exit 0' '$d/rec.err' && test $n -ge 40 && test \$(( $s * 10 )) -ge \$(( $n * 8 ))"
		check "static: $what: trace --inject with no gem places the agent it carries, which loads and traces ($(grep -m1 'rbscope:' "$d/trace.out"); $(grep -c '^Object#static_spin(n=20000) <' "$d/trace.out") calls)" \
			sh -c "grep -q '^exit 0' '$d/trace.out' && grep -q '^Object#static_spin(n=20000) <0\.' '$d/trace.out' && grep -q '/tmp/rbscope-agent-$ver-[0-9a-f]*/rbscope/rbscope.so' '$d/maps.out'"
		check "static: $what: backtraces through that agent" \
			sh -c "grep -q '^exit 0' '$d/inj.out' && grep -q 'static_spin' '$d/inj.out' && grep -q '\"parked\"' '$d/inj.out'"
	done
	# A world whose /tmp is an absolute symbolic link (a container's /tmp -> /run/...): resolved by the kernel
	# through /proc/PID/root it would land in our own filesystem, where a directory of that name is too (a decoy).
	# Resolved inside the process's root: the agent is placed in its /run/..., and its socket found there; nothing
	# is written in ours.
	if root=$("$top/scripts/ruby-chroot" 2.7 2>/dev/null); then
		ov=$work/symtmp
		elsewhere=/run/rbscope-symtmp-$$
		mkdir -p "$ov/up" "$ov/wk" "$ov/m" "$elsewhere"
		# (the overlay mounted here, as a container runtime mounts a root; the process in a mount namespace of its
		# own over it, with no gem)
		mount -t overlay overlay -o "lowerdir=$root,upperdir=$ov/up,workdir=$ov/wk" "$ov/m" &&
			rm -rf "$ov/m/tmp" && mkdir -p -m 1777 "$ov/m$elsewhere" && ln -s "$elsewhere" "$ov/m/tmp" && mkdir -p "$ov/m/var/tmp/st" &&
			cp "$top/tests/integration/ruby/static-target.rb" "$ov/m/var/tmp/st/"
		unshare -m --propagation private sh -c "mount -t tmpfs none $ov/m/var/lib/gems &&
			exec chroot $ov/m ruby /var/tmp/st/static-target.rb" >"$work/symtmp.out" 2>&1 &
		stp=$!
		pids="$pids $stp"
		if await_ready "$work/symtmp.out" $stp; then
			"$sbin" backtraces -p $stp --inject >"$work/symtmp.bt" 2>"$work/symtmp.err"
			rc=$?
			check "static: a process whose /tmp is an absolute symbolic link: the agent placed where its /tmp leads, loads and answers, nothing written in ours (exit $rc; $(grep -m1 -o '/[a-z0-9/-]*/rbscope-agent-[^/]*' /proc/$stp/maps))" \
				sh -c "test $rc = 0 && grep -q '$elsewhere/rbscope-agent-2.7-[0-9a-f]*/rbscope/rbscope.so' /proc/$stp/maps &&
					test -z \"\$(ls -A '$elsewhere')\""
		else
			not_ok "static: the process with a symbolic /tmp did not start ($(head -c 200 "$work/symtmp.out"))"
		fi
		stop_ruby $stp
		umount -l "$ov/m" 2>/dev/null
		rm -rf "$elsewhere"
	fi
else
	not_ok "make static: fails ($(tail -c 300 "$work/static-build.log"))"
fi

# The Debian package: installed with dpkg -i in a minimal bookworm (scripts/clean-chroot: man-db, no Ruby, nothing of
# rbscope's), through a throwaway overlay of it; the binary runs, the manual pages read.
deb=$top/build/rbscope_$(sed -n 's/.*VERSION = "\(.*\)"/\1/p' "$top/lib/rbscope/version.rb")_amd64.deb
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$top" -s deb >"$work/deb-build.log" 2>&1 && croot=$("$top/scripts/clean-chroot" 2>"$work/clean.err"); then
	ov=$work/overlay
	mkdir -p "$ov/up" "$ov/wk" "$ov/m"
	timeout 120 unshare -m --propagation private sh -c "
		mount -t overlay overlay -o lowerdir=$croot,upperdir=$ov/up,workdir=$ov/wk $ov/m && mount -t proc proc $ov/m/proc &&
		cp '$deb' $ov/m/tmp/rbscope.deb &&
		chroot $ov/m dpkg -i /tmp/rbscope.deb >$work/deb-install.out 2>&1; echo \"exit \$?\" >>$work/deb-install.out
		chroot $ov/m rbscope --version >$work/deb-version.out 2>&1; echo \"exit \$?\" >>$work/deb-version.out
		chroot $ov/m env MANWIDTH=100 man rbscope-record >$work/deb-man.out 2>&1; echo \"exit \$?\" >>$work/deb-man.out
		chroot $ov/m dpkg -L rbscope >$work/deb-files.out 2>&1"
	check "make deb: $(basename "$deb") ($(stat -c %s "$deb") bytes) installs with dpkg -i in a clean bookworm ($(grep -v '^exit' "$work/deb-install.out" | tail -n 1))" \
		sh -c "grep -q '^exit 0' '$work/deb-install.out' && grep -q '^/usr/bin/rbscope\$' '$work/deb-files.out' && ! test -e '$croot/usr/bin/rbscope'"
	check "make deb: the installed rbscope --version runs there, with the agents it carries ($(tail -n 2 "$work/deb-version.out" | head -n 1))" \
		sh -c "grep -q '^exit 0' '$work/deb-version.out' && grep -q '^rbscope [0-9]' '$work/deb-version.out' && grep -q ': 2.7 3.1 3.3 3.4\$' '$work/deb-version.out'"
	check "make deb: man rbscope-record reads the installed page ($(grep -m1 -A1 '^NAME' "$work/deb-man.out" | tail -n 1 | sed 's/^ *//'))" \
		sh -c "grep -q '^exit 0' '$work/deb-man.out' && grep -q 'rbscope-record - ' '$work/deb-man.out' && grep -q -- '--mode' '$work/deb-man.out'"
else
	not_ok "make deb: fails ($(tail -c 300 "$work/deb-build.log") $(cat "$work/clean.err" 2>/dev/null))"
fi

# docs/fleet.md's DaemonSet: it parses as Kubernetes YAML, its pieces agree (the token file is the Secret's mount, the
# port the one served, the host's pids and ptrace), and its container's arguments, run by the static binary (another
# port, the token in a file here), serve every Ruby with that token and none without.
ruby -ryaml -e '
	docs = File.read(ARGV[0]).scan(/^```yaml\n(.*?)^```/m).flatten.flat_map { |y| YAML.load_stream(y) }
	ds = docs.find { |d| d.is_a?(Hash) && d["kind"] == "DaemonSet" } or abort "no DaemonSet"
	pod = ds.dig("spec", "template", "spec")
	c = pod["containers"].first
	args = c["args"]
	listen = args[args.index("--listen") + 1]
	token = args[args.index("--token-file") + 1]
	mount = c["volumeMounts"].find { |m| token.start_with?(m["mountPath"] + "/") } or abort "token file not mounted"
	vol = pod["volumes"].find { |v| v["name"] == mount["name"] } or abort "no volume #{mount["name"]}"
	abort "token volume is not a Secret" unless vol["secret"]
	abort "selector does not match the labels" unless ds.dig("spec", "selector", "matchLabels").all? { |k, v| ds.dig("spec", "template", "metadata", "labels", k) == v }
	abort "not in the host pid namespace" unless pod["hostPID"] == true
	abort "no SYS_PTRACE" unless c.dig("securityContext", "capabilities", "add").include?("SYS_PTRACE")
	abort "port #{listen} not the container port" unless c["ports"].any? { |p| ":#{p["containerPort"]}" == listen }
	abort "apiVersion" unless ds["apiVersion"] == "apps/v1"
	puts args.join("\n")' "$top/docs/fleet.md" >"$work/ds-args" 2>"$work/ds.err"
rc=$?
check "docs/fleet.md: the DaemonSet parses as YAML and its parts agree (token file on the Secret's mount, the listen port the container's, hostPID, SYS_PTRACE) ($(cat "$work/ds.err"))" test $rc = 0
if [ $rc = 0 ] && [ -x "$sbin" ]; then
	port=$((23000 + $$ % 20000))
	echo "t0ken-$$-0123456789abcdef" >"$work/token"
	mapfile -t dsargs < <(sed "s|^:6061\$|127.0.0.1:$port|; s|^/etc/rbscope/token\$|$work/token|" "$work/ds-args")
	ruby "$top/tests/integration/ruby/static-target.rb" >"$work/ds-target.out" 2>&1 &
	dtp=$!
	pids="$pids $dtp"
	await_ready "$work/ds-target.out" $dtp
	"$sbin" "${dsargs[@]}" -d 6 >"$work/ds-serve.out" 2>&1 &
	dsp=$!
	pids="$pids $dsp"
	for _ in $(seq 30); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
	sleep 1
	with=$(curl -s -H "Authorization: Bearer t0ken-$$-0123456789abcdef" "http://127.0.0.1:$port/targets")
	without=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/targets")
	check "docs/fleet.md: the DaemonSet's arguments (${dsargs[*]}) serve every Ruby with the token, none without (without: HTTP $without; $(head -c 200 "$work/ds-serve.out"))" \
		sh -c "echo '$with' | grep -q '$dtp' && test '$without' = 401"
	kill $dsp 2>/dev/null
	stop_ruby $dtp
fi
