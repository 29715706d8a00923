# locals.sh: snapshot --locals against the program's own view of its variables (binding.local_variable_get, Thread#[]),
# live and from a core, on every Ruby; a busy program read again and again; the text form (sourced by run).

locals_rb=$top/tests/integration/ruby/locals.rb
locals_check=$top/tests/integration/ruby/locals-check.rb
for ver in $RUBIES; do
	if ! start_ruby "$ver" "$locals_rb"; then
		skipped "locals: ruby $ver: cannot start it here ($(head -c 200 "$work/chroot.err" 2>/dev/null))"
		continue
	fi
	oracle=$work/ruby-$ver.out
	"$RBSCOPE" snapshot -p "$pid" --locals --json >"$work/locals.json" 2>"$work/e"
	ruby "$locals_check" "$oracle" "$work/locals.json" >"$work/said" 2>&1
	rc=$?
	check "locals: ruby $ver: every argument, local, Thread#[] and thread variable as Ruby sees it, live ($(head -n 3 "$work/said" | tr '\n' ' '))" \
		test $rc = 0
	"$RBSCOPE" snapshot -p "$pid" --locals >"$work/locals.txt" 2>"$work/e"
	check "locals: ruby $ver: text: one \`name = value\` line each, under its frame, fiber-locals and thread variables under the thread" \
		sh -c "grep -q '^    Shape#deep (' '$work/locals.txt' && grep -qF '        self = #<Shape @name=\"circle\">' '$work/locals.txt' &&
			grep -qF '        lv_utf8 = \"héllo 日本\"' '$work/locals.txt' &&
			grep -qF '        lv_big = 1180591620717411303424' '$work/locals.txt' &&
			grep -qF '    Thread.current[:fl_request] = \"req-42\"' '$work/locals.txt' &&
			grep -qF '    thread_variable_get(:tv_tenant) = \"acme\"' '$work/locals.txt'"
	if command -v gcore >/dev/null; then
		root=$("$top/scripts/ruby-chroot" "$ver")
		sysroot=()
		[ "$root" = / ] || sysroot=(--sysroot "$root")
		rm -f "$work"/core.*
		gcore -o "$work/core" "$pid" >"$work/gcore.log" 2>&1
		"$RBSCOPE" snapshot --core "$work/core.$pid" "${sysroot[@]}" --locals --json >"$work/locals-core.json" 2>"$work/e"
		ruby "$locals_check" "$oracle" "$work/locals-core.json" >"$work/said" 2>&1
		rc=$?
		check "locals: ruby $ver: the same from a core ($(head -n 3 "$work/said" | tr '\n' ' '))" test $rc = 0
		rm -f "$work"/core.*
	fi
	stop_ruby "$pid"
	# A program whose frames return and whose values change under every read: each read says what it could.
	if start_ruby "$ver" "$workload"; then
		bad=0
		for _ in $(seq 20); do
			"$RBSCOPE" snapshot -p "$pid" --locals --json >"$work/busy.json" 2>"$work/e"
			rc=$?
			[ $rc = 0 ] && ruby -rjson -e 'JSON.parse(File.read(ARGV[0]))' "$work/busy.json" || bad=$((bad + 1))
		done
		check "locals: ruby $ver: 20 reads of a busy program: each exit 0 with whole JSON, the program alive ($bad bad)" \
			sh -c "test $bad = 0 && kill -0 $pid"
		stop_ruby "$pid"
	fi
done
