# agent-client.rb: speaks the agent's wire protocol (src/agent/proto.h) badly on purpose, for the fault tests.
# usage: ruby agent-client.rb SOCKET oversized|unknown|partial  -> prints what the agent answered, one line per reply
require "socket"

HELLO = 1
OK = 64
ERROR = 65

def frame(type, body) = [body.bytesize, type, 0].pack("LSS") + body

def reply(s)
  hdr = s.read(8) or return "closed"
  len, type, = hdr.unpack("LSS")
  body = s.read(len)
  "#{type == OK ? 'OK' : type == ERROR ? 'ERROR' : type} #{body.lines.first.to_s.chomp}"
end

s = UNIXSocket.new(ARGV[0])
case ARGV[1]
when "oversized"
  # 5 MiB, over the 4 MiB limit: an error, then the same connection still answers.
  s.write([5 << 20, 4, 0].pack("LSS"))
  chunk = "x" * 65_536
  80.times { s.write(chunk) }
  puts reply(s)
  s.write(frame(HELLO, "rbscope 1"))
  puts reply(s)
when "unknown"
  s.write(frame(999, "??"))
  puts reply(s)
  s.write(frame(HELLO, "rbscope 1"))
  puts reply(s)
when "partial"
  # Half a header, then silence: the agent must give up on us (and keep serving others).
  s.write([100, 1].pack("LS"))
  $stdout.sync = true
  puts "sent"
  sleep 7
  puts(s.read(1).nil? ? "dropped" : "still open")
end
