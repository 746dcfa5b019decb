from mtvbench.cli import app

app(prog_name="mtvbench")
