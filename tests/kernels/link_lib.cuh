// A header of link_lib.cu alone: the key of a linked program covers each source's headers.
#define LIB_WEIGHT 0.5f
