// attncheck: the program (DESIGN §8).
int main() { return 0; }
