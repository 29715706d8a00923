# ingest.rb PORT DIR: a stand-in for Grafana Pyroscope's /ingest on loopback, for `rbscope serve --push`. Each
# POST's request line goes to DIR/N.query and the "profile" part of its multipart body to DIR/N.pb.gz; it answers
# 200. Prints "ready" once listening.
require "socket"

$stdout.sync = true
server = TCPServer.new("127.0.0.1", Integer(ARGV[0]))
dir = ARGV[1]
puts "ready"
n = 0
loop do
  c = server.accept
  line = c.gets.to_s
  headers = {}
  while (h = c.gets) && h != "\r\n"
    k, v = h.split(":", 2)
    headers[k.downcase] = v.strip
  end
  body = c.read(Integer(headers.fetch("content-length", "0")))
  n += 1
  File.write(File.join(dir, "#{n}.query"), line)
  boundary = headers["content-type"].to_s[/boundary=(.+)/, 1]
  if boundary
    body.split("--#{boundary}").each do |part|
      head, data = part.split("\r\n\r\n", 2)
      next unless head&.include?('name="profile"') && data
      File.binwrite(File.join(dir, "#{n}.pb.gz"), data.delete_suffix("\r\n"))
    end
  end
  c.write "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
  c.close
end
