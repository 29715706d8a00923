# compare-backtraces.rb RUBY_JSON SNAPSHOT_JSON [NAME...]: does each named thread's snapshot read, frame by
# frame, as that thread's own Thread#backtrace_locations (label, path, line)? Prints each difference; exit 1 if
# any. The threads NAME... may instead be marked unreadable by rbscope (a core that holds zeros for them).
# Before Ruby 3.4 a backtrace label names a method without its class ("nap", "block in nap", "sleep"), from
# 3.4 on with it ("Object#nap", "Kernel#sleep"), as rbscope always does: the class is left out to compare.
# One difference is by design: a define_method body is named after its method (Dyn#dynamic), where Ruby
# labels the block it was made from (block in <class:Dyn>); such a frame must still agree on path and line.
require "json"

want = JSON.parse(File.read(ARGV[0]))
snap = JSON.parse(File.read(ARGV[1]))
qualified = snap["ruby_version"].split(".").map(&:to_i).then { |a| (a <=> [3, 4]) >= 0 }

def bare(name)
  return Regexp.last_match(1) + bare(Regexp.last_match(2)) if name =~ /\A(.* in )(.+)\z/
  name.start_with?("<") ? name : name.sub(/\A.*[#.]/, "")
end

bad = 0
want.each do |w|
  t = snap["threads"].find { |x| x["name"] == w["name"] }
  unless t
    puts "#{w["name"]}: not in the snapshot"
    bad += 1
    next
  end
  if t["unreadable"] && ARGV[2..].include?(w["name"])
    puts "#{w["name"]}: unreadable in this core, as allowed"
    next
  end
  got = t["frames"].map { |f| [qualified ? f["name"] : bare(f["name"]), f["path"], f["line"]] }
  got = got.zip(w["frames"]).map do |g, r|
    r && r[0] =~ /\Ablock (\(\d+ levels\) )?in <class:/ && g[0] !~ / in / && g[1..] == r[1..] ? r : g
  end
  if got != w["frames"]
    bad += 1
    puts "#{w["name"]}: Ruby says #{w["frames"].inspect}"
    puts "#{" " * w["name"].size}  rbscope #{got.inspect}"
  end
end
puts "#{want.size} threads, #{want.sum { |w| w["frames"].size }} frames compared, #{bad} differ"
exit(bad.zero? ? 0 : 1)
