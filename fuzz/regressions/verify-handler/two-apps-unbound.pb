
a.b.c c