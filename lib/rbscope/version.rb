# version.rb: the gem's version, kept equal to the CLI's (Makefile VERSION).
module Rbscope
  VERSION = "0.3.0"
end
