# firefox.sh: the Gecko profile has the meta fields the Firefox Profiler requires and consistent per-thread tables.
ff=$fmtdir/profile.gecko.json
"$RBSCOPE" report -i "$raw" -f firefox -o "$ff" 2>"$work/ff.err"
check "firefox: written ($(head -c 200 "$work/ff.err"))" test -s "$ff"
ruby "$top/tests/integration/browser/firefox-check.rb" "$ff" render=Report#render crunch=Stats#crunch >"$work/ff.out" 2>&1
check "firefox: meta fields, tables that resolve, threads render and crunch in their methods ($(head -c 300 "$work/ff.out"))" \
	grep -q '^ok' "$work/ff.out"
check "firefox: a write error fails the command" sh -c "! '$RBSCOPE' report -i '$raw' -f firefox -o /dev/full 2>/dev/null"
