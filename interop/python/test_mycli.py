"""mycli (PyPI) against quiver's MySQL-protocol port, non-interactive: a
query with --execute, MySQL's table locks and a dump file in batch mode."""

import csv
import io
import os
import shutil
import subprocess
import sys
import uuid

import pytest

from conftest import connect_mysql


def mycli_path():
    # The suite's venv has it on its bin next to python (requirements.txt).
    path = os.path.join(os.path.dirname(sys.executable), "mycli")
    if os.path.exists(path):
        return path
    path = shutil.which("mycli")
    if path is None:
        pytest.fail("mycli is missing: interop/run.sh installs it from interop/python/requirements.txt")
    return path


@pytest.fixture
def mycli(mysql_addr, creds, tmp_path):
    """Runs mycli against quiver with a private HOME (mycli writes its
    configuration and history there) and returns its result."""
    host, port = mysql_addr
    user, password = creds
    rc = tmp_path / "myclirc"
    rc.write_text("")
    env = dict(os.environ, HOME=str(tmp_path), TERM="dumb")

    def run(*args, database="main", stdin=None):
        out = subprocess.run(
            [mycli_path(), "--myclirc", str(rc), "-h", host, "-P", str(port), "-u", user,
             "--password", password, "-D", database, *args],
            input=stdin, env=env, capture_output=True, text=True, timeout=120,
        )
        return out

    return run


@pytest.fixture
def database(mysql_conn):
    """A fresh MySQL database (a DuckDB schema), dropped after the test."""
    name = f"mycli_{uuid.uuid4().hex[:10]}"
    with mysql_conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}`")
    yield name
    with mysql_conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")


def test_mycli_execute(mycli, database):
    out = mycli("-e", "CREATE TABLE `notes` (`id` int(11) NOT NULL AUTO_INCREMENT, `body` varchar(40) NOT NULL, "
                "PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4", database=database)
    assert out.returncode == 0, out.stderr
    out = mycli("-e", "INSERT INTO notes (body) VALUES ('first'), ('it''s; second')", database=database)
    assert out.returncode == 0, out.stderr
    out = mycli("--csv", "-e", "SELECT id, body FROM notes ORDER BY id", database=database)
    assert out.returncode == 0, out.stderr
    rows = list(csv.reader(io.StringIO(out.stdout)))
    assert rows == [["id", "body"], ["1", "first"], ["2", "it's; second"]]


def test_mycli_lock_tables(mycli, database, mysql_addr, creds):
    out = mycli("-e", "CREATE TABLE t (id int PRIMARY KEY) ENGINE=InnoDB; INSERT INTO t VALUES (1)", database=database)
    assert out.returncode == 0, out.stderr
    out = mycli("--csv", "-e", "LOCK TABLES `t` READ /*!32311 LOCAL */; SELECT count(*) AS n FROM t; UNLOCK TABLES",
                database=database)
    assert out.returncode == 0, out.stderr
    assert list(csv.reader(io.StringIO(out.stdout))) == [["n"], ["1"]]


# DUMP is a file as mysqldump (MariaDB's, Debian's mariadb-client) writes it:
# version comments, user variables, MySQL DDL, table locks, backslash
# escapes, and a last line that is only a comment.
DUMP = r"""/*M!999999\- enable the sandbox mode */
-- MariaDB dump 10.19  Distrib 10.11.19-MariaDB, for debian-linux-gnu (x86_64)
--
-- Host: 127.0.0.1    Database: shop
-- ------------------------------------------------------
-- Server version	8.0.33-quiver

/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;
/*!40101 SET @OLD_CHARACTER_SET_RESULTS=@@CHARACTER_SET_RESULTS */;
/*!40101 SET @OLD_COLLATION_CONNECTION=@@COLLATION_CONNECTION */;
/*!40101 SET NAMES utf8mb4 */;
/*!40103 SET @OLD_TIME_ZONE=@@TIME_ZONE */;
/*!40103 SET TIME_ZONE='+00:00' */;
/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=0 */;
/*!40014 SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, FOREIGN_KEY_CHECKS=0 */;
/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */;
/*!40111 SET @OLD_SQL_NOTES=@@SQL_NOTES, SQL_NOTES=0 */;

--
-- Table structure for table `items`
--

DROP TABLE IF EXISTS `items`;
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8mb4 */;
CREATE TABLE `items` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `shop_id` int(11) NOT NULL,
  `name` varchar(64) NOT NULL DEFAULT '',
  `price` decimal(10,2) NOT NULL,
  `added` timestamp NOT NULL DEFAULT current_timestamp() ON UPDATE current_timestamp(),
  PRIMARY KEY (`id`),
  KEY `shop_k` (`shop_id`),
  CONSTRAINT `items_shop` FOREIGN KEY (`shop_id`) REFERENCES `shops` (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=4 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
/*!40101 SET character_set_client = @saved_cs_client */;

--
-- Dumping data for table `items`
--

LOCK TABLES `items` WRITE;
/*!40000 ALTER TABLE `items` DISABLE KEYS */;
INSERT INTO `items` VALUES (1,1,'it\'s a \\ backslash',9.99,'2024-01-02 03:04:05'),(2,1,'line\none; two',0.50,'2024-01-02 03:04:05'),(3,2,'caf\é',100.00,'2024-06-01 00:00:00');
/*!40000 ALTER TABLE `items` ENABLE KEYS */;
UNLOCK TABLES;

--
-- Table structure for table `shops`
--

DROP TABLE IF EXISTS `shops`;
CREATE TABLE `shops` (
  `id` int(11) NOT NULL,
  `name` varchar(20) DEFAULT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;

LOCK TABLES `shops` WRITE;
INSERT INTO `shops` VALUES (1,'north'),(2,'south');
UNLOCK TABLES;
/*!40103 SET TIME_ZONE=@OLD_TIME_ZONE */;

/*!40101 SET SQL_MODE=@OLD_SQL_MODE */;
/*!40014 SET FOREIGN_KEY_CHECKS=@OLD_FOREIGN_KEY_CHECKS */;
/*!40014 SET UNIQUE_CHECKS=@OLD_UNIQUE_CHECKS */;
/*!40101 SET CHARACTER_SET_CLIENT=@OLD_CHARACTER_SET_CLIENT */;
/*!40101 SET CHARACTER_SET_RESULTS=@OLD_CHARACTER_SET_RESULTS */;
/*!40101 SET COLLATION_CONNECTION=@OLD_COLLATION_CONNECTION */;
/*!40111 SET SQL_NOTES=@OLD_SQL_NOTES */;

-- Dump completed on 2026-12-02  3:00:00
"""


def test_mycli_runs_a_dump(mycli, database, mysql_addr, creds):
    out = mycli(database=database, stdin=DUMP)
    assert out.returncode == 0, out.stderr

    conn = connect_mysql(mysql_addr, creds, autocommit=True)
    conn.select_db(database)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT id, shop_id, name, price FROM items ORDER BY id")
            rows = [(r[0], r[1], r[2], str(r[3])) for r in cur.fetchall()]
            assert rows == [
                (1, 1, "it's a \\ backslash", "9.99"),
                (2, 1, "line\none; two", "0.50"),
                (3, 2, "café", "100.00"),
            ]
            # AUTO_INCREMENT goes on from the dump's AUTO_INCREMENT=4, and
            # the foreign key, deferred while the dump ran, holds.
            cur.execute("INSERT INTO items (shop_id, name, price) VALUES (2, 'new', 1)")
            cur.execute("SELECT max(id) FROM items")
            assert cur.fetchone()[0] == 4
            with pytest.raises(Exception):
                cur.execute("INSERT INTO items (shop_id, name, price) VALUES (9, 'orphan', 1)")
    finally:
        conn.close()
