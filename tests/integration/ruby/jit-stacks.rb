# jit-stacks.rb COLLAPSED SCRIPT: do the main thread's stacks of a recording of jit.rb (collapsed, root first,
# "name (path:line)" frames) hold every frame, and every caller at the line it called from? Ruby's own rule for a
# JIT: only the innermost frame may not know its line, which rbscope shows as "?". Checks, over every stack:
# - a frame of the chain (link1, link2, link3, the block in link3) sits on the frames that call it, in order
#   (chain, link1, link2, link3, Integer#times, block in link3): none left out;
# - Array#each is a C method at the path and line of its caller (3.4's YJIT runs a Ruby version of it, which Ruby's
#   backtraces show as the C method: its path and line its caller's);
# - Object#leaf sits on Object#tiny, and each kind's method on the loop's block;
# - every frame but the innermost has a known line, and a caller's is the line of its call;
# - the innermost frame of spread (a loop over three lines) is at one of its lines or "?", and no one line holds
#   80% of those known (the interpreter spreads them 15-31%; a stale pc read as a place holds them all).
# Prints each stack that fails (at most 5 of each kind), then a line of counts; exit 1 if any failed.
lines = File.readlines(ARGV[1])
path_of = ->(frame) { frame[/\((.*):[^:]*\)\z/, 1] }
line_no = ->(frame) { frame[/:([^:]*)\)\z/, 1] }
name_of = ->(frame) { frame.sub(/ \([^()]*\)\z/, "") }
at = ->(text) { (lines.index { |l| l.include?(text) } or abort "no #{text.inspect} in #{ARGV[1]}") + 1 }
call_line = {
  "Object#chain" => at["(chain's call)"], "Object#link1" => at["(link1's call)"],
  "Object#link2" => at["(link2's call)"], "Object#tiny" => at["i = leaf(i) while"],
}
kind_line = {
  "Object#tiny" => at["when :tiny"], "Object#spread" => at["when :spread"],
  "Object#blocky" => at["when :blocky"], "Object#chain" => at["when :chain"],
}
spread_lines = (at["def spread"]..at["def blocky"]).to_a
chain = ["Object#chain", "Object#link1", "Object#link2", "Object#link3", "Integer#times", "block in Object#link3"]

bad = Hash.new(0)
seen = Hash.new(0)
spread_top = Hash.new(0)
fail_with = lambda do |why, stack|
  bad[why] += 1
  puts "#{why}: #{stack.join(";")}" if bad[why] <= 5
end
File.foreach(ARGV[0]) do |l|
  stack, count = l.chomp.split(/ (?=\d+\z)/)
  frames = stack.split(";")
  frames.pop while frames.size > 1 && frames.last.start_with?("(") # the GC's and thread states' pseudo-frames
  names = frames.map(&name_of)
  seen[:stacks] += count.to_i
  # every frame but the innermost with a known line (a C method on top takes its caller's: that one too)
  inner = frames.size - 1
  frames.each_with_index do |f, i|
    next if i == inner || line_no[f] != "?"
    next if i == inner - 1 && path_of[frames[inner]] == path_of[f] && line_no[frames[inner]] == "?"
    fail_with["a caller without its line", frames]
  end
  # the chain, in order from Object#chain
  if (c = names.index("Object#chain"))
    got = names[c..]
    got.pop if got.size > 1 && !chain.include?(got.last) # a C method the innermost calls (3.3+: Integer#times is Ruby code)
    fail_with["the chain with a frame missing", frames] unless got == chain.first(got.size)
    seen[:chain] += count.to_i
  elsif names.any? { |n| chain.include?(n) && n != "Integer#times" }
    fail_with["the chain's frames without Object#chain", frames]
  end
  # Array#each at its caller's line, as a C method in Ruby's backtraces (3.4's YJIT runs a Ruby version of it,
  # which they show as the C method: Primitive.attr! :c_trace)
  names.each_with_index do |n, i|
    next unless n == "Array#each" && i > 0
    unless path_of[frames[i]] == path_of[frames[i - 1]] && line_no[frames[i]] == line_no[frames[i - 1]]
      fail_with["Array#each not at its caller's path and line", frames]
    end
    seen[:each] += count.to_i
  end
  if (i = names.index("Object#leaf"))
    fail_with["Object#leaf not on Object#tiny", frames] unless names[i - 1] == "Object#tiny" && i == inner
    seen[:leaf] += count.to_i
  end
  # callers at the lines they call from
  names.each_with_index do |n, i|
    next if i == inner
    if call_line[n] && names[i + 1] =~ /link|leaf/ && line_no[frames[i]] != call_line[n].to_s
      fail_with["#{n} not at its call's line #{call_line[n]}", frames]
    end
    if kind_line[names[i + 1]] && n == "block (2 levels) in <main>" && line_no[frames[i]] != kind_line[names[i + 1]].to_s
      fail_with["the loop not at the line that calls #{names[i + 1]}", frames]
    end
  end
  if names[inner] == "Object#spread"
    spread_top[line_no[frames[inner]]] += count.to_i
    fail_with["Object#spread at a line not its own", frames] unless line_no[frames[inner]] == "?" ||
                                                                  spread_lines.include?(line_no[frames[inner]].to_i)
  end
end
# A loop runs all its lines: one known line with most of its samples is a stale pc read as a place.
known = spread_top.reject { |k, _| k == "?" }
if known.values.sum >= 20 && known.values.max > 0.8 * known.values.sum
  fail_with["Object#spread at one line (#{known.max_by { |_, v| v }[0]}) in most of its known lines", []]
end
fail_with["no stack of the chain", []] if seen[:chain].zero?
fail_with["no stack with Object#leaf", []] if seen[:leaf].zero?
fail_with["no stack with Array#each", []] if seen[:each].zero?
puts "#{seen[:stacks]} samples, #{seen[:chain]} in the chain, #{seen[:leaf]} in leaf, #{seen[:each]} with Array#each; spread's innermost lines " \
     "#{spread_top.sort_by { |k, _| k.to_s }.map { |k, v| "#{k}: #{v}" }.join(", ")}; " \
     "#{bad.empty? ? "all as Ruby has them" : bad.map { |k, v| "#{v} #{k}" }.join(", ")}"
exit(bad.empty? ? 0 : 1)
