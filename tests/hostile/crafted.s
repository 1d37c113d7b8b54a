# A shared object that looks like a Python to a careless reader: take_gil and drop_gil at
# file offsets chosen to land inside the victim's (a copy of sleep's) executable segment.
	.text
	.fill 0x2000, 1, 0xc3
	.globl take_gil
	.type take_gil, @function
take_gil:
	ret
	.fill 15, 1, 0xc3
	.size take_gil, . - take_gil
	.globl drop_gil
	.type drop_gil, @function
drop_gil:
	ret
	.fill 15, 1, 0xc3
	.size drop_gil, . - drop_gil
	.section .note.GNU-stack,"",@progbits
