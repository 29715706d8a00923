# locals-check.rb ORACLE SNAPSHOT_JSON: snapshot --locals of locals.rb against the program's own view of its
# variables (its "oracle" lines): every simple value equal to its inspect (a String longer than rbscope shows: its
# first bytes and length), objects with their ivars, Structs and Ranges too (an object's without its address),
# every other value's class the same; the fiber-locals and thread variables; parameters marked; self. Prints
# each difference and exits 1 if there is one.
require "json"

oracle = File.readlines(ARGV[0]).grep(/^oracle /).map { |l| JSON.parse(l.sub(/^oracle /, "")) }
snap = JSON.parse(File.read(ARGV[1]))
bad = []
locals = {}
frames = []
snap["threads"].each do |th|
  th["frames"].each do |f|
    frames << f
    (f["locals"] || []).each { |l| locals[l["name"]] ||= l }
  end
end
vars = oracle.select { |o| o["name"] }
bad << "no oracle lines" if vars.size < 40
vars.each do |o|
  l = locals[o["name"]]
  if !l
    bad << "#{o["frame"]}: #{o["name"]} not shown"
  elsif l["class"] != o["class"]
    bad << "#{o["name"]}: class #{l["class"].inspect}, Ruby says #{o["class"].inspect}"
  elsif o["simple"] && o["class"] == "String" && o["bytes"] > 64
    head = l["value"][/\A(".*")\.\.\. \((\d+) bytes\)\z/, 1]
    ok = head && $2.to_i == o["bytes"] && o["inspect"].start_with?(head[0..-2])
    bad << "#{o["name"]}: #{l["value"]} is not the start of #{o["inspect"][0, 80]}..." unless ok
  elsif (o["simple"] || o["fields"]) && l["value"] != o["inspect"]
    bad << "#{o["name"]}: #{l["value"]}, Ruby says #{o["inspect"]}"
  elsif o["simple"] != l["simple"]
    bad << "#{o["name"]}: simple #{l["simple"]}, expected #{o["simple"]}"
  end
end
%w[lv_arg lv_default lv_rest lv_item lv_kw lv_opt lv_opts].each do |n|
  bad << "#{n}: not marked a parameter" unless locals[n] && locals[n]["arg"]
end
%w[lv_l1 lv_in_block lv_str].each do |n|
  bad << "#{n}: marked a parameter" if locals[n] && locals[n]["arg"]
end
bad << "lv_later: #{locals["lv_later"]&.dig("value").inspect}, not nil" unless locals["lv_later"]&.dig("value") == "nil"
arr = locals["lv_huge_arr"]&.dig("value").to_s
bad << "lv_huge_arr: #{arr}" unless arr == "[0, 1, 2, ...] (Array size 1000000)"
cyc = locals["lv_cyclic"]&.dig("value").to_s
bad << "lv_cyclic: #{cyc}" unless cyc == "[#<Array size=1>]"
deep = frames.find { |f| f["name"] == "Shape#deep" }
bad << "Shape#deep: self #{deep&.dig("self", "value").inspect}" unless deep&.dig("self", "value") == '#<Shape @name="circle">'
top = frames.find { |f| f["name"] == "<main>" }
bad << "<main>: self #{top&.dig("self", "value").inspect}" unless top&.dig("self", "value") == "main"
{ "fiber_locals" => "Thread#[:%s]", "thread_variables" => "thread_variable_get(:%s)" }.each do |kind, how|
  oracle.select { |o| o[kind] }.each do |o|
    th = snap["threads"].find do |t|
      o[kind] == "main" ? t["main"] : (t["fiber_locals"] || []).any? { |l| l["name"] == "fl_worker" }
    end
    bad << "#{o[kind]} thread: #{kind}: #{th["#{kind}_error"]}" if th && th["#{kind}_error"]
    got = (th && th[kind] || []).to_h { |l| [l["name"], l["value"]] }
    o["values"].each { |k, v| bad << "#{o[kind]} thread: #{how % k} #{got[k].inspect}, Ruby says #{v}" if got[k] != v }
  end
end
puts bad.empty? ? "#{vars.size} variables as Ruby sees them" : bad
exit(bad.empty? ? 0 : 1)
