/* agents_obj.S: the agents bundle (scripts/agent-bundle's format) as bytes in the binary; empty but for its frame
   in a build that carries none. */
	.section .rodata
	.balign 8
	.globl rbscope_agents, rbscope_agents_end
rbscope_agents:
	.incbin AGENTS_BUNDLE
rbscope_agents_end:
	.section .note.GNU-stack,"",@progbits
