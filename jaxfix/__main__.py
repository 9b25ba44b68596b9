from jaxfix.entry import run

run()
