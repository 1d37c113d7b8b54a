# A shared object that looks like a Python to a careless reader: take_gil and drop_gil at
# file offsets chosen to land inside the victim's (a copy of sleep's) executable segment. They
# carry frame descriptions (.cfi_*, and the linker's .eh_frame_hdr), so that their entries are
# proven against this file's own code: the attack is the swap, not a site the code refutes.
	.text
	.fill 0x2000, 1, 0xc3
	.globl take_gil
	.type take_gil, @function
take_gil:
	.cfi_startproc
	ret
	.fill 15, 1, 0xc3
	.cfi_endproc
	.size take_gil, . - take_gil
	.globl drop_gil
	.type drop_gil, @function
drop_gil:
	.cfi_startproc
	ret
	.fill 15, 1, 0xc3
	.cfi_endproc
	.size drop_gil, . - drop_gil
	.section .note.GNU-stack,"",@progbits
