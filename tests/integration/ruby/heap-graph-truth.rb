# heap-graph-truth.rb: what `heap path`, `retained` and `strings` must find in a dump, worked out another way
# with Ruby's own JSON parser: breadth-first searches from the ROOT records' references, and dominators by
# the iterative algorithm of Cooper, Harvey and Kennedy (rbscope uses Lengauer-Tarjan). Prints sorted
# "key<TAB>values" lines: path_length, reachable, unreachable, holder_retained, duplicates, then one
# "object" line per reachable object and one "class" and "location" line per group (retained sizes).
# Usage: ruby heap-graph-truth.rb DUMP PLANTED_ADDRESS HOLDER_ADDRESS
require "json"
require_relative "class-names"
dump, planted, holder = ARGV
objs = {}
roots = []
File.foreach(dump) do |l|
  r = JSON.parse(l)
  if r["type"] == "ROOT" then roots.concat(r["references"] || [])
  elsif r["address"] && !%w[SHAPE NONE].include?(r["type"]) then objs[r["address"]] ||= r
  end
end
refs = ->(a) { a == :root ? roots : ((objs[a] || {})["references"] || []) }

# Parents of everything the roots reach without passing `without`, breadth first.
reach = lambda do |without = nil|
  parent = {}
  queue = []
  roots.each { |a| next if a == without || parent.key?(a); parent[a] = :root; queue << a }
  until queue.empty?
    a = queue.shift
    refs.(a).each { |b| next if b == without || parent.key?(b); parent[b] = a; queue << b }
  end
  parent
end
all = reach.()
depth = 0
a = planted
(depth += 1; a = all[a]) while a && a != :root
live = objs.values.select { |o| all.key?(o["address"]) }
dead = objs.values.reject { |o| all.key?(o["address"]) }
without = reach.(holder)
kept = live.reject { |o| without.key?(o["address"]) } # the holder and all that only it reaches
dups = objs.values.count { |o| o["type"] == "STRING" && !o["shared"] && o["value"] == "rbscope-dup-777" }
out = []
out << "path_length\t#{all.key?(planted) ? depth : 0}"
out << "reachable\t#{live.size}\t#{live.sum { |o| o["memsize"].to_i }}"
out << "unreachable\t#{dead.size}\t#{dead.sum { |o| o["memsize"].to_i }}"
out << "holder_retained\t#{kept.sum { |o| o["memsize"].to_i }}\t#{kept.size}"
out << "duplicates\t#{dups}"

# Dominators: depth-first postorder from a virtual root, then Cooper-Harvey-Kennedy to a fixed point.
post = []
seen = { root: true }
stack = [[:root, 0]]
until stack.empty?
  node, i = stack.last
  succ = refs.(node)
  if i == succ.size
    post << node
    stack.pop
    next
  end
  stack.last[1] += 1
  b = succ[i]
  next if seen[b]
  seen[b] = true
  stack << [b, 0]
end
po = {}
post.each_with_index { |n, i| po[n] = i }
preds = Hash.new { |h, k| h[k] = [] }
post.each { |n| refs.(n).each { |b| preds[b] << n } }
idom = { root: :root }
rpo = post.reverse
changed = true
while changed
  changed = false
  rpo.each do |b|
    next if b == :root
    new = nil
    preds[b].each do |p|
      next unless idom[p]
      if new.nil? then new = p
      else
        x, y = p, new
        while x != y
          x = idom[x] while po[x] < po[y]
          y = idom[y] while po[y] < po[x]
        end
        new = x
      end
    end
    next if idom[b] == new
    idom[b] = new
    changed = true
  end
end
size = Hash.new(0)
count = Hash.new(0)
post.each do |n| # children before their dominators
  next if n == :root
  size[n] += objs[n] ? objs[n]["memsize"].to_i : 0
  count[n] += objs[n] ? 1 : 0
  size[idom[n]] += size[n]
  count[idom[n]] += count[n]
end
live.each { |o| out << "object\t#{o["address"]}\t#{size[o["address"]]}\t#{count[o["address"]]}" }

# Groups: a member counts whole when no other member of its group dominates it.
class_name = class_namer(objs.values)
{ "class" => ->(o) { class_of(o) }, "location" => ->(o) { o["file"] && "#{o["file"]}:#{o["line"]}" } }.each do |by, key|
  groups = Hash.new { |h, k| h[k] = [0, 0, 0, 0] }
  live.each do |o|
    k = key.(o)
    g = groups[k]
    g[2] += 1
    g[3] += o["memsize"].to_i
    up = idom[o["address"]]
    up = idom[up] while up != :root && (objs[up].nil? || key.(objs[up]) != k)
    next unless up == :root
    g[0] += size[o["address"]]
    g[1] += count[o["address"]]
  end
  groups.each do |k, g|
    label = if by == "location" then k || "(no allocation info)"
            elsif k.nil? then "(no class: internal objects)"
            else class_name.(k)
            end
    out << "#{by}\t#{label}\t#{g.join("\t")}"
  end
end
puts out.sort
