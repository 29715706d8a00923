/* capture_obj.S: the compiled BPF program (bpf/capture.bpf.c), as bytes in the binary. */
	.section .rodata
	.balign 8
	.globl rbscope_capture_obj, rbscope_capture_obj_end
rbscope_capture_obj:
	.incbin CAPTURE_OBJ
rbscope_capture_obj_end:
	.section .note.GNU-stack,"",@progbits
